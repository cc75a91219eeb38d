import json
import time

import pytest

from portal.measure import reaper
from portal.measure.models import ApiToken, Measurement, Quota, Vantage
from tests import factories, servers

pytestmark = pytest.mark.e2e


@pytest.fixture
def token(user):
    return ApiToken.issue(user)


def request_test(client, token, **params):
    response = client.post(
        "/api/v1/measurements",
        data=json.dumps(params),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def wait_finished(client, token, slug, timeout=45):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/api/v1/measurements/{slug}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
        if body["status"] in ("done", "failed"):
            return body
        time.sleep(0.2)
    raise AssertionError(f"measurement {slug} not finished within {timeout} s: {body}")


def test_e2e_api_quick_measurement_done_with_trace(client, token, celery_worker, iperf3_port):
    site = factories.make_site(slug="e2e-site", port=iperf3_port)
    vantage = Vantage.objects.get(name=celery_worker.name)
    assert vantage.congestion_controls and vantage.kernel
    # The worker keeps its vantage's last_seen fresh while it runs, test or no test.
    servers.wait_until(
        lambda: Vantage.objects.get(pk=vantage.pk).last_seen > vantage.last_seen, 10, "a vantage presence refresh"
    )
    slug = request_test(client, token, site=site.slug, vantage=celery_worker.name, mode="quick", duration_s=5)
    body = wait_finished(client, token, slug)
    assert body["status"] == "done", body
    results = body["results"]
    # Quick mode answers by its deadline: its figure is the headline unless the run fell back
    # to the full -t (asked with until_converged, not here).
    assert results["quick_answered"] is True, results
    assert body["headline_bps"] == results["quick_bps"] > 0
    trace = client.get(f"/api/v1/measurements/{slug}/trace", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert len(trace["t"]) >= 5 and len(trace["streams"]) == 1
    assert Measurement.objects.get(slug=slug).trace.sample_count == len(trace["t"])


def test_e2e_same_site_never_overlaps(client, token, celery_worker, iperf3_port):
    site = factories.make_site(slug="e2e-busy", port=iperf3_port)
    slugs = [request_test(client, token, site=site.slug, vantage=celery_worker.name, duration_s=3) for _ in range(3)]
    results = [wait_finished(client, token, slug, timeout=60) for slug in slugs]
    assert [r["status"] for r in results] == ["done"] * 3, results
    intervals = sorted(Measurement.objects.filter(slug__in=slugs).values_list("started_at", "finished_at"))
    for (_, end), (start, _) in zip(intervals, intervals[1:]):
        assert end <= start, intervals


def test_e2e_same_site_two_vantages_never_overlap(client, user, token, start_worker, iperf3_port):
    """The per-site rule holds across vantages: two workers on two vantages, one target."""
    Quota.objects.create(user=user)  # four pending at once is over the default limit of three
    first, second = start_worker(), start_worker()
    site = factories.make_site(slug="e2e-shared", port=iperf3_port)
    slugs = [
        request_test(client, token, site=site.slug, vantage=worker.name, duration_s=3)
        for worker in (first, second, first, second)
    ]
    results = [wait_finished(client, token, slug, timeout=60) for slug in slugs]
    assert [r["status"] for r in results] == ["done"] * 4, results
    assert sorted({r["vantage"] for r in results}) == sorted([first.name, second.name])
    intervals = sorted(Measurement.objects.filter(slug__in=slugs).values_list("started_at", "finished_at"))
    for (_, end), (start, _) in zip(intervals, intervals[1:]):
        assert end <= start, intervals


def test_e2e_worker_killed_leaves_nothing_running(client, token, celery_worker, iperf3_port):
    site = factories.make_site(slug="e2e-kill", port=iperf3_port)
    slug = request_test(client, token, site=site.slug, vantage=celery_worker.name, mode="full", duration_s=30)
    needle = f"-p {iperf3_port} -t 30"
    servers.wait_until(lambda: servers.processes_with(needle), 30, "the prober to start")
    servers.wait_until(lambda: Measurement.objects.get(slug=slug).heartbeat_at is not None, 5, "a heartbeat")
    celery_worker.kill()
    # PDEATHSIG: the prober dies with the pool process that ran it.
    servers.wait_until(lambda: not servers.processes_with(needle), 5, "the orphaned prober to die")
    assert Measurement.objects.get(slug=slug).status == "running"  # nobody is left to say otherwise...
    time.sleep(1.1)
    # ...but the reaper does.
    assert reaper.reap(heartbeat_s=1.0) == {"worker_lost": 1, "queued_too_long": 0, "vantage_offline": 0}
    m = Measurement.objects.get(slug=slug)
    assert (m.status, m.failure_code) == ("failed", "worker_lost")
    assert not Measurement.objects.filter(status="running").exists()
