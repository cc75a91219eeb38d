"""Per-user limits on requesting tests, so one account cannot monopolise the sites: every test
holds a site's only iperf3 slot, and other users' tests wait behind it.

Three limits, each over the user's own requests: tests started in the last hour, tests queued
or running now, and test-seconds in the last 24 hours (a finished test counts the seconds it
ran, a pending one the duration it asked for). A user's limits come from their own Quota row,
else the most generous of their groups' rows, else the QUOTA_* settings; a blank field means no
limit. Staff are exempt, and so are sweeps (they have no requesting user).
"""

import math
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import F, FloatField, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from .vocab import UNFINISHED_STATUSES

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
    from .models import Quota

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


def check(user, duration_s, now=None):
    """Raises QuotaExceeded if `user` may not request a test of `duration_s` seconds now."""
    from .models import Measurement

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
