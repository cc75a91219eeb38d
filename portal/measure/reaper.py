"""Fails measurements that can no longer finish, so none stays `running` or `queued` forever."""

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from . import progress, vantages
from .models import Measurement, Vantage
from .vocab import FailureCode, Status

log = logging.getLogger(__name__)


def reap(now=None, heartbeat_s=None, queued_s=None):
    now = now or timezone.now()
    heartbeat_s = settings.HEARTBEAT_TEST_LOST_S if heartbeat_s is None else heartbeat_s
    queued_s = settings.REAPER_QUEUED_S if queued_s is None else queued_s
    stale = now - timedelta(seconds=heartbeat_s)
    silent = Q(status=Status.RUNNING) & (Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, started_at__lt=stale))
    lost = list(Measurement.objects.filter(silent).values_list("pk", flat=True))
    # The condition is repeated in the UPDATE so a heartbeat that lands in between wins.
    lost_count = Measurement.objects.filter(silent, pk__in=lost).update(
        status=Status.FAILED,
        finished_at=now,
        failure_code=FailureCode.WORKER_LOST,
        failure_reason=f"worker lost: no heartbeat from the worker for more than {heartbeat_s:g} s; the test was abandoned.",
    )
    old = now - timedelta(seconds=queued_s)
    # A vantage runs one test at a time by default, so a long sweep's last tests wait their
    # turn for longer than queued_s: while the vantage is still working through its queue (a
    # test of it heartbeated within heartbeat_s) its queued rows wait; they never fail for it.
    moving = Measurement.objects.filter(
        status__in=(Status.RUNNING, Status.DONE, Status.FAILED), heartbeat_at__gte=stale
    ).values("vantage_id")
    stuck = list(
        Measurement.objects.filter(status=Status.QUEUED, created_at__lt=old)
        .exclude(vantage_id__in=moving)
        .values_list("pk", flat=True)
    )
    stuck_count = Measurement.objects.filter(pk__in=stuck, status=Status.QUEUED, created_at__lt=old).update(
        status=Status.FAILED,
        finished_at=now,
        failure_code=FailureCode.QUEUED_TOO_LONG,
        failure_reason=f"not started within {queued_s:g} s: no worker took it from its vantage's queue "
        f"(the vantage may be offline, or the site stayed busy).",
    )
    offline_ids = _fail_queued_of_offline_vantages(now)
    for pk in lost + stuck + offline_ids:
        progress.clear(pk)
    if lost_count or stuck_count or offline_ids:
        log.warning(
            "reaper failed %d lost running, %d stale queued and %d queued for offline vantages",
            lost_count,
            stuck_count,
            len(offline_ids),
        )
    return {
        FailureCode.WORKER_LOST.value: lost_count,
        FailureCode.QUEUED_TOO_LONG.value: stuck_count,
        FailureCode.VANTAGE_OFFLINE.value: len(offline_ids),
    }


def _fail_queued_of_offline_vantages(now):
    """A queued test of a vantage whose worker stopped heartbeating would wait for REAPER_QUEUED_S
    with no visible reason: it fails now, saying which vantage and since when. One UPDATE per
    offline vantage that has queued rows (few)."""
    failed = []
    offline = Vantage.objects.exclude(pk__in=vantages.online(now=now).values("pk"))
    for vantage in offline.filter(measurements__status=Status.QUEUED).distinct():
        rows = Measurement.objects.filter(vantage=vantage, status=Status.QUEUED)
        ids = list(rows.values_list("pk", flat=True))
        rows.filter(pk__in=ids).update(
            status=Status.FAILED,
            finished_at=now,
            failure_code=FailureCode.VANTAGE_OFFLINE,
            failure_reason=vantages.offline_reason(vantage, now) + "; the test was not run.",
        )
        failed += ids
    return failed
