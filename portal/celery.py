"""The Celery app (Celery's Django layout: `celery -A portal worker`).

Measurement tasks go to the queue of the measurement's vantage (`vantage.<name>`, chosen when
the task is sent); a worker on a prober host consumes only its own vantage queue, and the
housekeeping worker the shared `celery` queue (the reaper and task watchdog, which beat sends
every REAPER_INTERVAL_S, sweeps, alert deliveries): maintenance never runs inside a request.
Every worker and beat is started through portal/launch.py. Tasks live in the Django apps'
tasks.py (autodiscovered); task and queue names are in portal/measure/vocab.py.
"""

import os

from celery import Celery
from django.conf import settings

from portal.measure.vocab import (
    SHARED_QUEUE,
    TASK_REAP,
    TASK_SWEEP_FIRE,
    TASK_SWEEP_START_RUN,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_default_queue = SHARED_QUEUE
app.conf.task_routes = {name: {"queue": SHARED_QUEUE} for name in (TASK_REAP, TASK_SWEEP_FIRE, TASK_SWEEP_START_RUN)}
app.autodiscover_tasks()
# Named, not imported: the step's module needs the models, which exist only once the worker
# has set Django up; the blueprint resolves the name then.
app.steps["worker"].add("portal.measure.vantages:VantagePresence")


def beat_schedule():
    # The static entries. Beat runs django-celery-beat's DatabaseScheduler (settings), which
    # copies these into its table; each sweep has its own row there (portal/sweeps/schedule.py).
    return {"reap-lost-measurements": {"task": TASK_REAP, "schedule": settings.REAPER_INTERVAL_S}}


@app.on_after_configure.connect
def _install_beat_schedule(sender, **kwargs):
    # Read once Celery reads its configuration, not when this module is imported: the package
    # portal imports this module while Django's settings may still be loading.
    sender.conf.beat_schedule = beat_schedule()
