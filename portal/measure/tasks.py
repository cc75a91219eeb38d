"""Celery tasks of the measure app. Each is thin: it takes primary keys or names, calls the
module that does the work, and turns runner.TryLater into a Celery retry. Names are the
constants in vocab.py (senders use them; renaming one would strand queued messages)."""

import logging

from celery import shared_task
from celery.exceptions import Retry

from . import dispatch, reaper, runner, vantages
from .vocab import TASK_REAP, TASK_REGISTER_VANTAGE, TASK_RUN

log = logging.getLogger(__name__)


@shared_task(name=TASK_RUN, bind=True, max_retries=None, ignore_result=True)
def run_measurement(self, measurement_id, site_busy_attempts=0, server_busy_attempts=0):
    try:
        runner.run(measurement_id, site_busy_attempts, server_busy_attempts)
    except runner.TryLater as later:
        log.info("measurement %s: %s; retrying in %.1f s", measurement_id, later.reason, later.countdown)
        dispatch.retrying(measurement_id, later.countdown)
        try:
            raise self.retry(args=[measurement_id], kwargs=later.kwargs, countdown=later.countdown) from None
        except Retry:
            raise
        except Exception:  # the broker is unreachable: the watchdog sends the retry when it is back
            log.exception("measurement %s: could not send its retry", measurement_id)
            dispatch.retry_not_sent(measurement_id)


@shared_task(name=TASK_REAP, ignore_result=True)
def reap():
    # Beat sends this every REAPER_INTERVAL_S to the shared queue: lost workers' rows are failed
    # and lost tasks sent again even when no request arrives.
    return {**reaper.reap(), **reaper.watchdog()}


@shared_task(name=TASK_REGISTER_VANTAGE, ignore_result=True)
def register_vantage(name):
    vantages.register_vantage(name)
