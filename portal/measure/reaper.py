"""Housekeeping, run only by the housekeeping worker (tasks.reap, which beat sends every
REAPER_INTERVAL_S), never inside a request: no measurement stays `running` or `queued` forever,
and none waits for a task that is gone.

reap() fails rows that can no longer finish: running ones whose worker stopped heartbeating,
queued ones no worker took, queued ones of a vantage gone offline.

watchdog() keeps each queued row's task on the broker (dispatch.py records when it was sent,
`dispatched_at`, and when it is due, `due_at`). Of the `queued` rows:

- never sent: sent now;
- due more than WATCHDOG_GRACE_S ago and its message is not waiting in its vantage's queue
  on the broker: the task is lost (a Redis restart drops the countdown retries a worker holds;
  kill -9 of a worker drops them too; a worker killed between putting the row back to
  `queued` and sending its retry sends nothing). It is sent again, up to
  WATCHDOG_MAX_RESENDS times, then failed as `task_lost` with the reason.

A message still in the queue is waiting for its vantage's worker, not lost: reap()'s
REAPER_QUEUED_S bound covers an offline vantage. Sending again is always safe: a worker runs a
measurement only after claiming it (queued -> running in one UPDATE), so a duplicate message
finds nothing to do. The broker's queue is read with redis-py in Celery's documented Redis
layout (redis_lists) or from kombu's file-system transport's folder; with another broker
overdue rows are left to REAPER_QUEUED_S.
"""

import json
import logging
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from . import progress, vantages
from .dispatch import TASK_ID_RE, send
from .models import Measurement, Vantage
from .vocab import TASK_RUN, FailureCode, Status, vantage_queue

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


def watchdog(now=None):
    """Sends unsent tasks, resends lost ones, fails rows whose task was lost too often.
    Returns counts {"sent", "resent", "task_lost"}."""
    now = now or timezone.now()
    counts = {"sent": 0, "resent": 0, "task_lost": 0}
    grace = timedelta(seconds=settings.WATCHDOG_GRACE_S)
    queued = Measurement.objects.filter(status=Status.QUEUED)
    unsent = list(
        queued.filter(dispatched_at__isnull=True, created_at__lt=now - grace).values_list("pk", "vantage__name")
    )
    overdue = list(
        queued.filter(dispatched_at__isnull=False, due_at__lt=now - grace).values_list(
            "pk", "vantage__name", "dispatch_count", "due_at"
        )
    )
    if not unsent and not overdue:
        return counts
    waiting = waiting_measurements({vantage_queue(name) for _, name, *_ in overdue})
    if waiting is None:
        return counts  # the broker is unreachable or unreadable: nothing can be sent or judged now
    for pk, name in unsent:
        counts["sent"] += send(pk, vantage_queue(name))
    for pk, name, resends, due_at in overdue:
        if pk in waiting:
            continue
        counts[_handle_lost(pk, name, resends, due_at, now)] += 1
    if any(counts.values()):
        log.warning("watchdog: %s", counts)
    return counts


def _handle_lost(pk, name, resends, due_at, now):
    if resends >= settings.WATCHDOG_MAX_RESENDS:
        reason = (
            f"task lost: its task was not on the broker {settings.WATCHDOG_GRACE_S:g} s after it was due, "
            f"{resends + 1} times (broker restarts or workers killed); it was given up."
        )
        Measurement.objects.filter(pk=pk, status=Status.QUEUED, due_at=due_at).update(
            status=Status.FAILED, finished_at=now, failure_code=FailureCode.TASK_LOST, failure_reason=reason
        )
        return "task_lost"
    # The condition repeats what was read, so a worker that claimed or retried it meanwhile wins.
    if (
        Measurement.objects.filter(pk=pk, status=Status.QUEUED, due_at=due_at).update(
            dispatch_count=F("dispatch_count") + 1, due_at=now, dispatched_at=None
        )
        == 1
    ):
        log.warning(
            "measurement %s: its task is lost (due %s, not in %s); sending it again", pk, due_at, vantage_queue(name)
        )
        send(pk, vantage_queue(name))
    return "resent"


# A message whose id is not of task_id()'s form (sent by other means) still names its
# measurement as its first argument.
ARGSREPR_RE = re.compile(r"^[\[(](\d+)\b")


def measurement_of(payload):
    """The measurement id a broker message (kombu's JSON envelope) is for, or None."""
    try:
        headers = json.loads(payload).get("headers") or {}
    except (ValueError, AttributeError):
        return None
    if headers.get("task") != TASK_RUN:
        return None
    match = TASK_ID_RE.match(str(headers.get("id") or "")) or ARGSREPR_RE.match(str(headers.get("argsrepr") or ""))
    return int(match.group(1)) if match else None


def waiting_measurements(queues):
    """Ids of the measurements whose task message waits in one of `queues` on the broker; None
    if the broker cannot be reached or read."""
    from portal.celery import app

    try:
        with app.connection_for_read() as conn:
            url, options = conn.as_uri(include_password=True), conn.transport_options
        scheme = urlsplit(url).scheme
        if scheme in {"redis", "rediss"}:
            payloads = list(_redis_payloads(url, options, queues))
        elif scheme == "filesystem":
            payloads = list(_filesystem_payloads(options, queues))
        else:
            return None
    except Exception as exc:  # noqa: BLE001 - the broker is down: the next tick tries again
        log.warning("watchdog: cannot read the broker's queues (%s)", exc)
        return None
    return {pk for pk in map(measurement_of, payloads) if pk is not None}


# Celery's documented Redis layout ("Redis Message Priorities" in its docs): a queue's messages
# wait in Redis lists, the first priority step's under the queue's own name and each other
# step's under the name, the separator and the step. Both come from the broker transport
# options (kombu's defaults below), so a deployment that sets them is still read right.
DEFAULT_PRIORITY_STEPS = (0, 3, 6, 9)
DEFAULT_PRIORITY_SEP = "\x06\x16"


def redis_lists(queue, options):
    """The Redis keys a queue's waiting messages are stored under."""
    steps = options.get("priority_steps", DEFAULT_PRIORITY_STEPS)
    sep = options.get("sep", DEFAULT_PRIORITY_SEP)
    return [f"{queue}{sep}{step}" if step else queue for step in steps]


def _redis_payloads(url, options, queues):
    import redis

    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    try:
        for queue in queues:
            for key in redis_lists(queue, options):
                yield from client.lrange(key, 0, -1)
    finally:
        client.close()


def _filesystem_payloads(options, queues):
    # kombu's file-system transport (make run without REDIS_URL): one file per message,
    # named after its queue, in data_folder_in.
    folder = Path(options["data_folder_in"])
    for queue in queues:
        for path in folder.glob(f"*.{queue}.msg"):
            try:
                yield path.read_bytes()
            except OSError:  # taken by a worker meanwhile
                continue
