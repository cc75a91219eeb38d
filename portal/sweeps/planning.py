"""Firing a sweep: a SweepRun plans every cell (site x vantage x setting) at once, in a
constant number of queries, creates the measurements of the cells that can run and hands them
to portal.measure's dispatch; every other cell records why it was skipped."""

import logging
import random
from datetime import timedelta

from django.db import transaction
from django.db.models import Avg, Sum
from django.utils import timezone

from portal.measure import dispatch as measure_dispatch
from portal.measure import vantages as presence
from portal.measure.models import Measurement, Site, Vantage
from portal.measure.vocab import SHARED_QUEUE, TASK_SWEEP_START_RUN, SkipCode, Status, SweepRunStatus, SweepTrigger

from .models import Sweep, SweepCell, SweepRun

log = logging.getLogger(__name__)

BUDGET_WINDOW = timedelta(hours=24)
# How far back a path's earlier cells say how many bytes a setting costs.
ESTIMATE_WINDOW = timedelta(days=7)
PENDING = (Status.QUEUED, Status.RUNNING)


def fire(sweep_id, trigger, now=None):
    """One firing of a sweep; returns its SweepRun, or None when there is nothing to run (the
    sweep is gone, or paused and fired by the schedule). Scheduled firings start after a random
    offset within the sweep's slip; runs asked for by a person start at once."""
    sweep = Sweep.objects.filter(pk=sweep_id).first()
    if sweep is None or (trigger == SweepTrigger.BEAT and not sweep.enabled):
        log.info("sweep %s: not run (%s)", sweep_id, "gone" if sweep is None else "paused")
        return None
    now = now or timezone.now()
    offset = random.uniform(0, sweep.slip_s) if trigger == SweepTrigger.BEAT and sweep.slip_s else 0.0
    run = SweepRun.objects.create(
        sweep=sweep, trigger=trigger, created_at=now, starts_at=now + timedelta(seconds=offset)
    )
    if offset:

        def later():
            from celery import current_app

            current_app.send_task(TASK_SWEEP_START_RUN, args=[run.pk], countdown=offset, queue=SHARED_QUEUE)

        transaction.on_commit(later)
        log.info("sweep %s: run %s starts in %.1f s", sweep.name, run.slug, offset)
        return run
    plan(run.pk, sweep=sweep)
    return run


def start_run(run_id):
    """The delayed start of a scheduled run. A sweep paused meanwhile drops the run."""
    run = SweepRun.objects.select_related("sweep").filter(pk=run_id, status=SweepRunStatus.SCHEDULED).first()
    if run is None:
        return None
    if not run.sweep.enabled:
        run.delete()
        return None
    return plan(run.pk, sweep=run.sweep)


@transaction.atomic
def plan(run_id, sweep=None, now=None):
    """Plans the run's cells and queues their measurements. The number of queries does not
    grow with the number of cells. Returns the number of cells planned, or None if the run was
    already planned (two deliveries of one start)."""
    now = now or timezone.now()
    if (
        SweepRun.objects.filter(pk=run_id, status=SweepRunStatus.SCHEDULED).update(
            status=SweepRunStatus.PLANNED, planned_at=now
        )
        != 1
    ):
        return None
    sweep = sweep or SweepRun.objects.select_related("sweep").get(pk=run_id).sweep
    sites = _sites(sweep)
    vantages = _vantages(sweep)
    online = {v.pk for v in vantages if presence.is_online(v)}
    history = _History(sweep, now)
    cells, measurements = [], []
    for site in sites:
        for vantage in vantages:
            for mode, window, streams, congestion in sweep.settings_matrix():
                cell = SweepCell(
                    run_id=run_id,
                    site=site,
                    vantage=vantage,
                    mode=mode,
                    window_bytes=window,
                    streams=streams,
                    congestion=congestion,
                )
                code = _skip_code(cell, online, history, sweep.daily_budget_bytes)
                if code:
                    cell.skip_code = code
                    cell.skip_reason = (
                        presence.offline_reason(vantage) if code == SkipCode.VANTAGE_OFFLINE else SkipCode(code).label
                    )[:300]
                else:
                    cell.measurement = Measurement(
                        site=site,
                        vantage=vantage,
                        mode=mode,
                        duration_s=sweep.duration_s,
                        streams=streams,
                        window_bytes=window,
                        congestion=congestion,
                        until_converged=sweep.until_converged,
                        status=Status.QUEUED,
                        created_at=now,
                    )
                    measurements.append(cell.measurement)
                cells.append(cell)
    # Saved in queue order (one site after another in turn); sent once this transaction commits.
    if measurements:
        measure_dispatch.queue_measurements(_spread(measurements))
    for cell in cells:
        cell.measurement_id = cell.measurement.pk if cell.measurement is not None else None
    SweepCell.objects.bulk_create(cells)
    log.info("sweep %s: run %s planned %d cells, %d to measure", sweep.name, run_id, len(cells), len(measurements))
    return len(cells)


def _sites(sweep):
    if sweep.all_sites:
        return list(Site.objects.filter(enabled=True).order_by("name", "pk"))
    return list(sweep.sites.order_by("name", "pk"))


def _vantages(sweep):
    if sweep.all_vantages:
        return list(Vantage.objects.filter(enabled=True).order_by("name"))
    return list(sweep.vantages.order_by("name"))


class _History:
    """What earlier runs of the sweep say about each path: settings still pending, bytes spent
    per site in the budget window, and what each setting cost last time (three queries)."""

    def __init__(self, sweep, now):
        cells = SweepCell.objects.filter(run__sweep=sweep)
        key = ("site_id", "vantage_id", "mode", "window_bytes", "streams", "congestion")
        self.pending = set(cells.filter(measurement__status__in=PENDING).values_list(*key))
        self.spent = dict(
            cells.filter(measurement__created_at__gte=now - BUDGET_WINDOW)
            .values_list("site_id")
            .annotate(total=Sum("measurement__bytes_sent"))
            .values_list("site_id", "total")
        )
        self.spent = {site: total or 0 for site, total in self.spent.items()}
        self.cost = {
            row[:-1]: int(row[-1])
            for row in cells.filter(measurement__status=Status.DONE, measurement__created_at__gte=now - ESTIMATE_WINDOW)
            .values_list(*key)
            .annotate(avg=Avg("measurement__bytes_sent"))
            .values_list(*key, "avg")
            if row[-1] is not None
        }

    @staticmethod
    def key(cell):
        return (cell.site.pk, cell.vantage.pk, cell.mode, cell.window_bytes, cell.streams, cell.congestion)

    def charge(self, cell, budget):
        """True if the cell fits the site's budget, counting it as spent; the first run of a
        setting costs what the site has not spent yet is unknown and counts as 0."""
        spent = self.spent.get(cell.site.pk, 0)
        cost = self.cost.get(self.key(cell), 0)
        if spent >= budget or spent + cost > budget:
            return False
        self.spent[cell.site.pk] = spent + cost
        return True


def _skip_code(cell, online, history, budget):
    site, vantage = cell.site, cell.vantage
    if not site.enabled:
        return SkipCode.SITE_DISABLED
    if not vantage.enabled:
        return SkipCode.VANTAGE_DISABLED
    if vantage.pk not in online:
        return SkipCode.VANTAGE_OFFLINE
    if cell.congestion and cell.congestion not in (vantage.congestion_controls or []):
        return SkipCode.CONGESTION_UNAVAILABLE
    if history.key(cell) in history.pending:
        return SkipCode.PENDING
    if budget is not None and not history.charge(cell, budget):
        return SkipCode.BUDGET_SPENT
    return ""


def _spread(measurements):
    """Queue order: one cell of each site in turn, so a vantage's worker slots go to different
    sites instead of waiting on one site's one-test-at-a-time rule."""
    by_site = {}
    for m in measurements:
        by_site.setdefault(m.site_id, []).append(m)
    rounds = max((len(ms) for ms in by_site.values()), default=0)
    return [ms[i] for i in range(rounds) for ms in by_site.values() if i < len(ms)]
