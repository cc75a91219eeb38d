"""Thin tasks: beat fires `sweeps.fire` with the sweep's pk; a run with a random start offset
is started later by `sweeps.start_run`. Both run on the shared `celery` queue."""

import logging

from celery import shared_task

from portal.measure.vocab import TASK_SWEEP_FIRE, TASK_SWEEP_START_RUN, SweepTrigger

log = logging.getLogger(__name__)


@shared_task(name=TASK_SWEEP_FIRE, ignore_result=True)
def fire(sweep_id):
    from .planning import fire as fire_sweep

    fire_sweep(sweep_id, trigger=SweepTrigger.BEAT)


@shared_task(name=TASK_SWEEP_START_RUN, ignore_result=True)
def start_run(run_id):
    from .planning import start_run as start

    start(run_id)
