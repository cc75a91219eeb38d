import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="measure.run", bind=True, max_retries=None, ignore_result=True)
def run_measurement(self, measurement_id, site_busy_attempts=0, server_busy_attempts=0):
    from portal.measure import runner

    try:
        runner.run(measurement_id, site_busy_attempts, server_busy_attempts)
    except runner.TryLater as later:
        log.info("measurement %s: %s; retrying in %.1f s", measurement_id, later.reason, later.countdown)
        raise self.retry(args=[measurement_id], kwargs=later.kwargs, countdown=later.countdown)


@shared_task(name="measure.reap", ignore_result=True)
def reap():
    from portal.measure import reaper

    return reaper.reap()


@shared_task(name="measure.register_vantage", ignore_result=True)
def register_vantage(name):
    from portal.measure.vantages import register_vantage as register

    register(name)


@shared_task(name="measure.sweep", ignore_result=True)
def sweep(mode="quick", duration_s=10, streams=1):
    from portal.measure.sweeps import sweep as run_sweep

    queued = run_sweep(mode=mode, duration_s=duration_s, streams=streams)
    log.info("sweep queued %d measurements", len(queued))
