"""The Celery app. Measurement tasks go to the queue of the measurement's vantage
(`vantage.<name>`, chosen when the task is sent); a worker on a prober host consumes its own
vantage queue and the shared `celery` queue (the reaper)."""
import os

from celery import Celery, bootsteps
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_default_queue = "celery"
app.conf.task_routes = {"measure.reap": {"queue": "celery"}, "measure.sweep": {"queue": "celery"}}
app.autodiscover_tasks(["workers"], related_name="tasks", force=True)


def _beat_schedule():
    from django.conf import settings

    schedule = {"reap-lost-measurements": {"task": "measure.reap", "schedule": settings.REAPER_INTERVAL_S}}
    if settings.SWEEP_INTERVAL_S:
        schedule["sweep"] = {"task": "measure.sweep", "schedule": settings.SWEEP_INTERVAL_S,
                             "kwargs": {"mode": settings.SWEEP_MODE, "duration_s": settings.SWEEP_DURATION_S}}
    return schedule


app.conf.beat_schedule = _beat_schedule()


def _own_vantage(worker_app):
    """This host's vantage name if this worker consumes its queue, else None."""
    from django.conf import settings

    queues = set(worker_app.amqp.queues.consume_from or ())
    name = settings.VANTAGE_NAME
    return name if f"vantage.{name}" in queues else None


class VantagePresence(bootsteps.StartStopStep):
    """Refreshes the vantage's last_seen while the worker runs, so pages can tell a live
    vantage from one whose worker is gone even when no test is asked of it."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        super().__init__(worker, **kwargs)
        self.tref = None

    def start(self, worker):
        from django.conf import settings

        name = _own_vantage(worker.app)
        if name:
            self.tref = worker.timer.call_repeatedly(settings.VANTAGE_HEARTBEAT_S, _touch_vantage, (name,), priority=10)

    def stop(self, worker):
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None


def _touch_vantage(name):
    import logging

    from django.db import close_old_connections
    from django.utils import timezone

    from portal.measure.models import Vantage

    try:
        close_old_connections()
        Vantage.objects.filter(name=name).update(last_seen=timezone.now())
    except Exception:  # a database hiccup must not take the worker down; the next tick retries
        logging.getLogger(__name__).exception("could not refresh vantage %s", name)


app.steps["worker"].add(VantagePresence)


@worker_ready.connect
def register_this_vantage(sender=None, **kwargs):
    """A worker that consumes a vantage queue announces the host it runs on."""
    name = _own_vantage(sender.app) if sender is not None else None
    if name:
        from portal.measure.vantages import register_vantage

        register_vantage(name)
