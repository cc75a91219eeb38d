"""The Celery app (Celery's Django layout: `celery -A portal worker`).

Measurement tasks go to the queue of the measurement's vantage (`vantage.<name>`, chosen when
the task is sent); a worker on a prober host consumes its own vantage queue and the shared
`celery` queue (reaper, sweeps). Tasks live in the Django apps' tasks.py (autodiscovered);
task and queue names are in portal/measure/vocab.py.
"""
import os

from celery import Celery
from django.conf import settings

from portal.measure.vocab import SHARED_QUEUE, TASK_REAP, TASK_SWEEP

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_default_queue = SHARED_QUEUE
app.conf.task_routes = {TASK_REAP: {"queue": SHARED_QUEUE}, TASK_SWEEP: {"queue": SHARED_QUEUE}}
app.autodiscover_tasks()
# Named, not imported: the step's module needs the models, which exist only once the worker
# has set Django up; the blueprint resolves the name then.
app.steps["worker"].add("portal.measure.vantages:VantagePresence")


def beat_schedule():
    schedule = {"reap-lost-measurements": {"task": TASK_REAP, "schedule": settings.REAPER_INTERVAL_S}}
    if settings.SWEEP_INTERVAL_S:
        schedule["sweep"] = {"task": TASK_SWEEP, "schedule": settings.SWEEP_INTERVAL_S,
                             "kwargs": {"mode": settings.SWEEP_MODE, "duration_s": settings.SWEEP_DURATION_S}}
    return schedule


@app.on_after_configure.connect
def _install_beat_schedule(sender, **kwargs):
    # Read once Celery reads its configuration, not when this module is imported: the package
    # portal imports this module while Django's settings may still be loading.
    sender.conf.beat_schedule = beat_schedule()
