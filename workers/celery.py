"""The Celery app. Measurement tasks go to the queue of the measurement's vantage
(`vantage.<name>`, chosen when the task is sent); a worker on a prober host consumes its own
vantage queue and the shared `celery` queue (the reaper)."""
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_default_queue = "celery"
app.conf.task_routes = {"measure.reap": {"queue": "celery"}}
app.autodiscover_tasks(["workers"], related_name="tasks", force=True)




def _reaper_interval():
    from django.conf import settings

    return settings.REAPER_INTERVAL_S


app.conf.beat_schedule = {"reap-lost-measurements": {"task": "measure.reap", "schedule": _reaper_interval()}}


@worker_ready.connect
def register_this_vantage(sender=None, **kwargs):
    """A worker that consumes a vantage queue announces the host it runs on."""
    queues = {q.name for q in sender.app.amqp.queues.consume_from.values()} if sender else set()
    from django.conf import settings

    if f"vantage.{settings.VANTAGE_NAME}" in queues:
        from portal.measure.vantages import register_vantage

        register_vantage(settings.VANTAGE_NAME)
