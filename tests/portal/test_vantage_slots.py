"""A vantage's max_concurrent_tests (issue 25): the claim holds it, a test over it waits (a
retry that spends no attempt and never fails), the launcher sizes the worker's pool by it,
and admins set it per vantage."""

import pytest

from portal import launch
from portal.measure import runner
from portal.measure.models import Measurement
from tests import factories


def _running(vantage, slug):
    site = factories.make_site(slug=slug)
    return factories.make_measurement(site=site, vantage=vantage, status="running")


def test_claim_vantage_at_its_limit_waits_without_spending_attempts(db, vantage, settings):
    settings.SITE_BUSY_RETRIES = 0  # a site-busy retry would fail at once; a vantage-busy one must not
    _running(vantage, "elsewhere")
    waiting = factories.make_measurement(vantage=vantage)
    with pytest.raises(runner.TryLater) as later:
        runner.run(waiting.pk, site_busy_attempts=0, server_busy_attempts=2)
    assert later.value.reason == "vantage busy: 1 of its 1 concurrent tests running"
    assert later.value.kwargs == {"site_busy_attempts": 0, "server_busy_attempts": 2}
    waiting.refresh_from_db()
    assert (waiting.status, waiting.started_at, waiting.failure_code) == ("queued", None, "")


def test_run_task_delivered_twice_does_nothing_without_waiting(db, vantage):
    # Its own running row must not count against it: the duplicate ends, it is not retried.
    running = _running(vantage, "elsewhere")
    assert runner.run(running.pk) is None
    assert Measurement.objects.get(pk=running.pk).status == "running"


def test_claim_vantage_below_its_limit_runs(db, vantage):
    vantage.max_concurrent_tests = 2
    vantage.save()
    _running(vantage, "elsewhere")
    waiting = factories.make_measurement(vantage=vantage)
    assert runner.claim(waiting.pk) is True
    assert Measurement.objects.get(pk=waiting.pk).status == "running"


def test_claim_other_vantages_tests_do_not_count(db, vantage):
    _running(factories.make_vantage(name="other"), "elsewhere")
    waiting = factories.make_measurement(vantage=vantage)
    assert runner.claim(waiting.pk) is True


def test_launch_vantage_worker_pool_sized_by_setting(db, vantage):
    def concurrency(argv):
        return argv[argv.index("--concurrency") + 1]

    assert concurrency(launch.vantage_worker(vantage.name)) == "1"
    assert concurrency(launch.vantage_worker("not-registered-yet")) == "1"
    vantage.max_concurrent_tests = 3
    vantage.save()
    argv = launch.vantage_worker(vantage.name, extra_queues=["extra"])
    assert concurrency(argv) == "3"
    assert argv[argv.index("-Q") + 1] == f"vantage.{vantage.name},extra"
    assert argv[argv.index("-n") + 1] == f"{vantage.name}@%h"


def test_admin_vantage_max_concurrent_tests_edited_and_bounded(admin_client, vantage):
    url = f"/admin/measure/vantage/{vantage.pk}/change/"
    form = {"name": vantage.name, "description": "", "kernel": "", "congestion_controls": "[]", "enabled": "on"}
    response = admin_client.post(url, {**form, "max_concurrent_tests": "0"})
    assert response.status_code == 200
    assert "Ensure this value is greater than or equal to 1." in response.content.decode()
    response = admin_client.post(url, {**form, "max_concurrent_tests": "2"})
    assert response.status_code == 302, response.content.decode()[:2000]
    vantage.refresh_from_db()
    assert vantage.max_concurrent_tests == 2


def test_admin_vantage_change_page_refused_to_non_staff(client, user, vantage):
    client.force_login(user)
    response = client.get(f"/admin/measure/vantage/{vantage.pk}/change/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
