"""How a measurement comes to exist: the one path from a request (the page, the API, "measure
longer") inside the user's limits, or from a sweep or the admin, to a `queued` row and its task.

A row and its Celery task cannot exist without each other (issue 9). queue_measurement() saves
the row `queued` and sends the task only once the row is committed, so a worker never looks for
a row that is not there. If the broker cannot take the task (Redis down, the web process killed
between commit and send), the row says so: `dispatched_at` stays empty, and `due_at` says when
its task should start (at once, or after a retry's countdown). The watchdog that sends such
tasks, and sends lost ones again, is housekeeping (reaper.py): a request never pays for it.
"""

import logging
import math
import re
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import OperationalError, transaction
from django.db.models import F, FloatField, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone
from psycopg.errors import DeadlockDetected

from .forms import MeasurementForm
from .models import Measurement, Quota, Site
from .units import format_window
from .vocab import TASK_RUN, UNFINISHED_STATUSES, Mode, Status, vantage_queue

log = logging.getLogger(__name__)


# --- requesting a test ---------------------------------------------------------------------


def request_measurement(form_data, user, longer_of=None):
    """form_data: a MeasurementForm or the raw data for one (page POST, API JSON). Invalid
    data raises django.core.exceptions.ValidationError carrying the form's messages; a request
    over the user's limits raises QuotaExceeded. longer_of: the quick test this one
    measures longer (request_longer_run)."""
    if isinstance(form_data, MeasurementForm):
        form = form_data
    else:
        form = MeasurementForm(data=form_data)
    if not form.is_valid():
        raise ValidationError(form.errors.as_data())
    requester = user if user is not None and user.is_authenticated else None
    fields = form.measurement_fields()
    if longer_of is not None:
        fields["longer_of"] = longer_of
    for attempt in range(DEADLOCK_ATTEMPTS):
        try:
            measurement = _queue_for(requester, fields)
            break
        except OperationalError as exc:
            # A worker writing the same site's rows (its data version) can pick this
            # transaction as PostgreSQL's deadlock victim; nothing was stored, so ask again.
            if not isinstance(exc.__cause__, DeadlockDetected) or attempt == DEADLOCK_ATTEMPTS - 1:
                raise
            log.warning("deadlock queueing a test of %s; trying again", fields["site"].slug)
    log.info("queued measurement %s of %s from %s", measurement.slug, measurement.site.slug, measurement.vantage.name)
    return measurement


DEADLOCK_ATTEMPTS = 3


def _queue_for(requester, fields):
    """The row and its task together, inside the user's limits: the task is sent once the row
    is committed (queue_measurement)."""
    with transaction.atomic():
        if requester is not None:
            # One request at a time per user: two sent at once must not both fit the last slot.
            get_user_model().objects.select_for_update().filter(pk=requester.pk).exists()
        if fields.get("longer_of") is not None:
            # Two clicks (or the owner and staff at once) get one full run: the quick row is
            # locked while its longer runs are looked at. Nothing else writes a finished row.
            quick = Measurement.objects.select_for_update().get(pk=fields["longer_of"].pk)
            pending = quick.longer_runs.exclude(status=Status.FAILED).order_by("-created_at").first()
            if pending is not None:
                return pending
        if requester is not None:
            check_quota(requester, fields["duration_s"])
        # The site row first, as the worker's writes take it (its data version), so the two
        # lock in the same order.
        Site.objects.select_for_update().filter(pk=fields["site"].pk).exists()
        return queue_measurement(requested_by=requester, **fields)


def request_longer_run(quick, user):
    """ "Measure longer": the full-mode test of a quick test's parameters (site, vantage,
    duration, streams, window, congestion), linked to it, through the same validation, quotas
    and queue as any request. A full run of it already queued, running or done is returned
    instead of a second one. Raises ValidationError / QuotaExceeded as request_measurement."""
    data = {
        "site": quick.site.slug,
        "vantage": quick.vantage.name,
        "mode": Mode.FULL.value,
        "duration_s": str(quick.duration_s),
        "streams": str(quick.streams),
        "window": format_window(quick.window_bytes),
        "congestion": quick.congestion,
    }
    return request_measurement(data, user, longer_of=quick)


# --- the user's limits ---------------------------------------------------------------------

# Per-user limits on requesting tests, so one account cannot monopolise the sites: every test
# holds a site's only iperf3 slot, and other users' tests wait behind it.
#
# Three limits, each over the user's own requests: tests started in the last hour, tests queued
# or running now, and test-seconds in the last 24 hours (a finished test counts the seconds it
# ran, a pending one the duration it asked for). A user's limits come from their own Quota row,
# else the most generous of their groups' rows, else the QUOTA_* settings; a blank field means no
# limit. Staff are exempt, and so are sweeps (they have no requesting user).

LIMIT_FIELDS = ("tests_per_hour", "max_pending", "test_seconds_per_day")


class QuotaExceeded(Exception):
    """A request over a limit: `message` for people, `retry_after_s` for Retry-After."""

    def __init__(self, message, retry_after_s):
        super().__init__(message)
        self.message = message
        self.retry_after_s = max(1, math.ceil(retry_after_s))


@dataclass(frozen=True)
class Limits:
    tests_per_hour: int | None
    max_pending: int | None
    test_seconds_per_day: int | None


def limits_for(user):
    """The limits that apply to `user`, or None when none do (staff)."""
    if user.is_staff:
        return None
    own = Quota.objects.filter(user=user).first()
    if own is not None:
        return Limits(*(getattr(own, name) for name in LIMIT_FIELDS))
    groups = list(Quota.objects.filter(group__in=user.groups.all()))
    if groups:
        # None (no limit) beats any number; otherwise the largest number wins.
        values = [[getattr(q, name) for q in groups] for name in LIMIT_FIELDS]
        return Limits(*(None if None in column else max(column) for column in values))
    return Limits(settings.QUOTA_TESTS_PER_HOUR, settings.QUOTA_MAX_PENDING, settings.QUOTA_TEST_SECONDS_PER_DAY)


def check_quota(user, duration_s, now=None):
    """Raises QuotaExceeded if `user` may not request a test of `duration_s` seconds now."""
    limits = limits_for(user)
    if limits is None:
        return
    now = now or timezone.now()
    mine = Measurement.objects.filter(requested_by=user)
    if limits.max_pending is not None:
        pending = mine.filter(status__in=UNFINISHED_STATUSES)
        if pending.count() >= limits.max_pending:
            raise QuotaExceeded(
                f"You have {limits.max_pending} tests queued or running, the most allowed at once: "
                "wait for one to finish, then ask again.",
                settings.QUOTA_PENDING_RETRY_S,
            )
    if limits.tests_per_hour is not None:
        hour = list(
            mine.filter(created_at__gt=now - timedelta(hours=1))
            .order_by("-created_at")
            .values_list("created_at", flat=True)[: limits.tests_per_hour]
        )
        if len(hour) >= limits.tests_per_hour:
            frees_at = hour[-1] + timedelta(hours=1)
            raise QuotaExceeded(
                f"You have requested {limits.tests_per_hour} tests in the last hour, the most allowed: "
                f"the next one can be requested at {frees_at:%H:%M:%S} UTC.",
                (frees_at - now).total_seconds(),
            )
    if limits.test_seconds_per_day is not None:
        _check_seconds(mine, limits.test_seconds_per_day, duration_s, now)


def _check_seconds(mine, budget_s, duration_s, now):
    day = mine.filter(created_at__gt=now - timedelta(days=1))
    spent = Coalesce(F("elapsed_s"), F("duration_s"), output_field=FloatField())
    used = day.aggregate(total=Coalesce(Sum(spent), 0.0, output_field=FloatField()))["total"]
    if used + duration_s <= budget_s:
        return
    # When enough of the oldest tests leave the 24 h window for this one to fit.
    retry_at = now + timedelta(days=1)
    need = used + duration_s - budget_s
    for created_at, seconds in day.order_by("created_at").annotate(spent=spent).values_list("created_at", "spent"):
        need -= seconds
        if need <= 0:
            retry_at = created_at + timedelta(days=1)
            break
    left = max(0, budget_s - used)
    raise QuotaExceeded(
        f"This {duration_s} s test would take you past {budget_s} test-seconds in 24 hours "
        f"({used:.0f} s used, {left:.0f} s left): ask for a shorter test, or wait.",
        (retry_at - now).total_seconds(),
    )


# --- the row and its task ------------------------------------------------------------------

# task_id()'s form, which the watchdog reads back (reaper.measurement_of).
TASK_ID_RE = re.compile(r"^m(\d+)-")


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
