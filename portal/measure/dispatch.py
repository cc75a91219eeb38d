"""A measurement row and its Celery task: one cannot exist without the other (issue 9).

queue_measurement() is the one way a measurement comes to exist (form, API, sweeps, admin):
it saves the row `queued` and sends the task only once the row is committed, so a worker
never looks for a row that is not there. If the broker cannot take the task (Redis down, the
web process killed between commit and send), the row says so: `dispatched_at` stays empty.

How a lost task is known: the row records when its current task was sent (`dispatched_at`)
and when it is due to start (`due_at`: at once, or after a retry's countdown). The watchdog
(run by the reaper task, which beat sends to the housekeeping worker every REAPER_INTERVAL_S,
never inside a request) looks at `queued` rows:

- never sent: sent now;
- due more than WATCHDOG_GRACE_S ago and its message is not waiting in its vantage's queue
  on the broker: the task is lost (a Redis restart drops the countdown retries a worker holds;
  kill -9 of a worker drops them too; a worker killed between putting the row back to
  `queued` and sending its retry sends nothing). It is sent again, up to
  WATCHDOG_MAX_RESENDS times, then failed as `task_lost` with the reason.

A message still in the queue is waiting for its vantage's worker, not lost: the reaper's
REAPER_QUEUED_S bound covers an offline vantage. Sending again is always safe: a worker runs a
measurement only after claiming it (queued -> running in one UPDATE), so a duplicate message
finds nothing to do. The broker's queue is read with redis-py in Celery's documented Redis
layout (redis_lists) or from kombu's file-system transport's folder; with another broker
overdue rows are left to REAPER_QUEUED_S.
"""

import json
import logging
import re
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import Measurement
from .vocab import TASK_RUN, FailureCode, Status, vantage_queue

log = logging.getLogger(__name__)

TASK_ID_RE = re.compile(r"^m(\d+)-")
ARGSREPR_RE = re.compile(r"^[\[(](\d+)\b")


def task_id(measurement_id):
    """Task ids name their measurement, so the watchdog can tell which rows a queue holds."""
    return f"m{measurement_id}-{uuid.uuid4().hex[:12]}"


def queue_measurement(**fields):
    """Creates a queued Measurement and sends its task once the row is committed (inside a
    caller's transaction: when that one commits). Returns the measurement."""
    with transaction.atomic():
        measurement = Measurement.objects.create(status=Status.QUEUED, due_at=timezone.now(), **fields)
        pk, queue = measurement.pk, vantage_queue(measurement.vantage.name)
        transaction.on_commit(lambda: send(pk, queue))
    return measurement


def queue_measurements(measurements):
    """queue_measurement() for many rows at once (a sweep run): unsaved Measurement objects go
    in with one INSERT and their tasks out once the rows are committed, over one broker
    connection, with one UPDATE marking them sent. Returns the saved measurements, in order."""
    now = timezone.now()
    for m in measurements:
        m.status, m.due_at = Status.QUEUED, now
    with transaction.atomic():
        Measurement.objects.bulk_create(measurements)
        pending = [(m.pk, vantage_queue(m.vantage.name)) for m in measurements]
        transaction.on_commit(lambda: send_many(pending))
    return measurements


def send_many(pending):
    """send() for a list of (measurement_id, queue); returns how many the broker took. On a
    broker error the rest stay unsent (dispatched_at empty) for the watchdog."""
    from portal.celery import app

    sent = []
    try:
        with app.producer_or_acquire() as producer:
            for pk, queue in pending:
                app.send_task(TASK_RUN, args=[pk], queue=queue, task_id=task_id(pk), producer=producer)
                sent.append(pk)
    except Exception as exc:  # noqa: BLE001 - as in send(): the broker is unreachable
        log.warning(
            "%d of %d tasks not sent (%s); the watchdog will send them", len(pending) - len(sent), len(pending), exc
        )
    if sent:
        Measurement.objects.filter(pk__in=sent, dispatched_at__isnull=True).update(dispatched_at=timezone.now())
    return len(sent)


def send(measurement_id, queue):
    """Publishes the task; True if the broker took it. Never raises: a row whose task could
    not be sent keeps dispatched_at empty and the watchdog sends it when the broker is back."""
    from portal.celery import app

    try:
        app.send_task(TASK_RUN, args=[measurement_id], queue=queue, task_id=task_id(measurement_id))
    except Exception as exc:  # noqa: BLE001 - kombu's OperationalError, redis errors, OSError: broker unreachable
        log.warning(
            "measurement %s: could not send its task to %s (%s); the watchdog will send it", measurement_id, queue, exc
        )
        return False
    Measurement.objects.filter(pk=measurement_id, dispatched_at__isnull=True).update(dispatched_at=timezone.now())
    return True


def retrying(measurement_id, countdown):
    """The task is about to send its own retry, due in countdown seconds."""
    now = timezone.now()
    Measurement.objects.filter(pk=measurement_id, status=Status.QUEUED).update(
        dispatched_at=now, due_at=now + timedelta(seconds=countdown)
    )


def retry_not_sent(measurement_id):
    """The retry could not be published (broker down): the watchdog sends it."""
    Measurement.objects.filter(pk=measurement_id, status=Status.QUEUED).update(dispatched_at=None)


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
