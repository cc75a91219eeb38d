"""A sweep's beat entry. Beat runs django-celery-beat's DatabaseScheduler, which re-reads
PeriodicTask rows whenever one is saved (PeriodicTasks.changed), so keeping one row per sweep
in step with the sweep is all an edit needs: no restart, no scheduler of our own."""

import json

from django.db import transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from portal.measure.vocab import TASK_SWEEP_FIRE


def entry_name(sweep):
    return f"sweep {sweep.pk}: {sweep.name}"[:200]


def _schedule_fields(sweep):
    if sweep.every_s:
        interval, _ = IntervalSchedule.objects.get_or_create(every=sweep.every_s, period=IntervalSchedule.SECONDS)
        return {"interval": interval, "crontab": None}
    minute, hour, day_of_month, month_of_year, day_of_week = sweep.cron.split()
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month_of_year=month_of_year,
        day_of_week=day_of_week,
        timezone="UTC",
    )
    return {"interval": None, "crontab": crontab}


@transaction.atomic
def sync(sweep):
    """Creates, updates or removes the sweep's PeriodicTask to match it. A sweep with neither
    interval nor crontab runs only when asked (run now, `manage.py sweep run`)."""
    task = sweep.periodic_task
    if not sweep.every_s and not sweep.cron:
        if task is not None:
            type(sweep).objects.filter(pk=sweep.pk).update(periodic_task=None)
            sweep.periodic_task = None
            task.delete()
        return None
    fields = {
        "name": entry_name(sweep),
        "task": TASK_SWEEP_FIRE,
        "kwargs": json.dumps({"sweep_id": sweep.pk}),
        "enabled": sweep.enabled,
        "description": f"Sweep {sweep.name} (managed by the sweep; edit the sweep)",
        **_schedule_fields(sweep),
    }
    if task is None:
        task = PeriodicTask(**fields)
    else:
        for key, value in fields.items():
            setattr(task, key, value)
    task.save()  # PeriodicTask.save() tells the running DatabaseScheduler to reload
    if sweep.periodic_task_id != task.pk:
        type(sweep).objects.filter(pk=sweep.pk).update(periodic_task=task)
        sweep.periodic_task = task
    return task


def remove(sweep):
    if sweep.periodic_task_id:
        PeriodicTask.objects.filter(pk=sweep.periodic_task_id).delete()
        from django_celery_beat.models import PeriodicTasks

        PeriodicTasks.update_changed()
