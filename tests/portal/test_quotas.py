"""Per-user request limits (portal/measure/dispatch.py), checked against rows in PostgreSQL."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from portal.measure import dispatch
from portal.measure.models import Quota
from tests import factories


@pytest.fixture
def limits(settings):
    settings.QUOTA_TESTS_PER_HOUR = 4
    settings.QUOTA_MAX_PENDING = 2
    settings.QUOTA_TEST_SECONDS_PER_DAY = 100
    settings.QUOTA_PENDING_RETRY_S = 30
    return settings


def _past(user, site, vantage, minutes_ago, status="done", duration_s=10, elapsed_s=None):
    m = factories.make_measurement(
        site=site, vantage=vantage, requested_by=user, status=status, duration_s=duration_s, elapsed_s=elapsed_s
    )
    m.created_at = timezone.now() - timedelta(minutes=minutes_ago)
    m.save(update_fields=["created_at"])
    return m


def test_quota_pending_limit_says_wait_with_retry_after(limits, user, site, vantage):
    _past(user, site, vantage, 1, status="queued")
    dispatch.check_quota(user, 10)
    _past(user, site, vantage, 1, status="running")
    with pytest.raises(dispatch.QuotaExceeded) as raised:
        dispatch.check_quota(user, 10)
    assert raised.value.message == (
        "You have 2 tests queued or running, the most allowed at once: wait for one to finish, then ask again."
    )
    assert raised.value.retry_after_s == 30


def test_quota_hourly_limit_retry_after_is_when_the_oldest_leaves_the_hour(limits, user, site, vantage):
    now = timezone.now()
    for minutes in (50, 40, 30, 20):
        _past(user, site, vantage, minutes, elapsed_s=1.0)
    _past(user, site, vantage, 61, elapsed_s=1.0)  # outside the hour: does not count
    with pytest.raises(dispatch.QuotaExceeded) as raised:
        dispatch.check_quota(user, 10, now=now)
    assert "You have requested 4 tests in the last hour, the most allowed" in raised.value.message
    assert 599 <= raised.value.retry_after_s <= 601  # the one from 50 min ago leaves in 10 min


def test_quota_test_seconds_count_elapsed_when_finished_and_duration_while_pending(limits, user, site, vantage):
    _past(user, site, vantage, 120, elapsed_s=2.5, duration_s=60)  # a quick test: 2.5 s counted
    _past(user, site, vantage, 60, status="queued", duration_s=60)  # pending: 60 s counted
    dispatch.check_quota(user, 37)  # 62.5 + 37 = 99.5 <= 100
    with pytest.raises(dispatch.QuotaExceeded) as raised:
        dispatch.check_quota(user, 38)
    assert raised.value.message == (
        "This 38 s test would take you past 100 test-seconds in 24 hours "
        "(62 s used, 38 s left): ask for a shorter test, or wait."
    )


def test_quota_test_seconds_retry_after_when_enough_old_tests_expire(limits, user, site, vantage, settings):
    settings.QUOTA_MAX_PENDING = None
    now = timezone.now()
    _past(user, site, vantage, 23 * 60, elapsed_s=50.0)  # leaves the day in 60 min
    _past(user, site, vantage, 22 * 60, elapsed_s=50.0)  # leaves in 120 min
    with pytest.raises(dispatch.QuotaExceeded) as raised:
        dispatch.check_quota(user, 10, now=now)
    assert 3599 <= raised.value.retry_after_s <= 3601


def test_quota_staff_and_unlimited_user_exempt(limits, user, site, vantage):
    for _ in range(3):
        _past(user, site, vantage, 1, status="queued")
    user.is_staff = True
    user.save()
    dispatch.check_quota(user, 3600)
    user.is_staff = False
    user.save()
    Quota.objects.create(user=user)  # every field blank: no limits
    dispatch.check_quota(user, 3600)


def test_quota_own_row_beats_groups_and_groups_take_the_most_generous(limits, user, site, vantage):
    small, large = Group.objects.create(name="small"), Group.objects.create(name="large")
    user.groups.add(small, large)
    Quota.objects.create(group=small, tests_per_hour=1, max_pending=1, test_seconds_per_day=10)
    Quota.objects.create(group=large, tests_per_hour=50, max_pending=None, test_seconds_per_day=20)
    assert dispatch.limits_for(user) == dispatch.Limits(50, None, 20)
    Quota.objects.create(user=user, tests_per_hour=2, max_pending=2, test_seconds_per_day=30)
    assert dispatch.limits_for(user) == dispatch.Limits(2, 2, 30)


def test_quota_row_is_for_a_user_or_a_group_not_both(user):
    from django.core.exceptions import ValidationError

    group = Group.objects.create(name="g")
    with pytest.raises(ValidationError, match="one user or for one group"):
        Quota(user=user, group=group).full_clean()
    with pytest.raises(ValidationError, match="one user or for one group"):
        Quota().full_clean()


def _form_data(site, vantage, **overrides):
    return {
        "site": site.slug,
        "vantage": vantage.name,
        "mode": "quick",
        "duration_s": "10",
        "streams": "1",
        **overrides,
    }


def test_quota_form_over_the_limit_answers_429_with_the_reason_and_stores_nothing(limits, client, user, site, vantage):
    from portal.measure.models import Measurement

    client.force_login(user)
    for _ in range(2):
        assert client.post("/measure/new", _form_data(site, vantage)).status_code == 302
    response = client.post("/measure/new", _form_data(site, vantage))
    assert response.status_code == 429
    assert response["Retry-After"] == "30"
    assert "You have 2 tests queued or running, the most allowed at once" in response.content.decode()
    assert Measurement.objects.filter(requested_by=user).count() == 2


def test_quota_form_test_seconds_over_the_limit(limits, client, user, site, vantage):
    client.force_login(user)
    response = client.post("/measure/new", _form_data(site, vantage, duration_s="60"))
    assert response.status_code == 302
    response = client.post("/measure/new", _form_data(site, vantage, duration_s="60"))
    assert response.status_code == 429
    assert "would take you past 100 test-seconds in 24 hours (60 s used, 40 s left)" in response.content.decode()
