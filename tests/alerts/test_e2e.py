"""An alert rule judged on a real worker's results: a real Celery worker runs the prober
against a real `iperf -s`; the server's receive window is cut to 8 KB (the seeds' Rice case, a
tenth of the loopback rate; the rule alerts below 30 %) for two tests, then restored. The alert opens after K = 2 bad
results, the webhook (a real local HTTP server that refuses the first POST) gets the alert
and then the recovery, retried by the worker's Celery task."""

import contextlib
import json
import secrets
import subprocess

import pytest

from portal.alerts.models import Alert, AlertRule, Delivery
from portal.measure.models import ApiToken, Measurement, Vantage
from tests import factories, servers
from tests.alerts.support import webhook_server

pytestmark = pytest.mark.e2e


@contextlib.contextmanager
def iperf2_on(port, *args):
    cmd = ["iperf", "-s", "-B", "127.0.0.1", "-p", str(port), *args]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        servers.wait_until(lambda: servers.listening(port), 10, " ".join(cmd), proc)
        yield
    finally:
        servers.stop(proc)


def run_tests(client, token, site, vantage, count):
    """Requests `count` quick tests one after another through the API; returns their rows."""
    rows = []
    for _ in range(count):
        response = client.post(
            "/api/v1/measurements",
            content_type="application/json",
            data=json.dumps({"site": site.slug, "vantage": vantage, "mode": "quick", "duration_s": 5}),
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert response.status_code == 201, response.content
        slug = response.json()["id"]
        finished = Measurement.objects.filter(slug=slug, status__in=("done", "failed"))
        servers.wait_until(finished.exists, 45, f"measurement {slug}")
        row = Measurement.objects.get(slug=slug)
        assert row.status == "done", (row.failure_code, row.failure_reason)
        rows.append(row)
    return rows


def test_alert_opens_after_k_bad_real_results_and_recovers(client, user, start_worker):
    queue = f"alerts-{secrets.token_hex(4)}"
    worker = start_worker(
        extra_queues=(queue,),
        extra_env={"ALERTS_QUEUE": queue, "ALERT_RETRY_BASE_S": "0.2", "ALERT_WEBHOOK_TIMEOUT_S": "2"},
    )
    vantage = Vantage.objects.get(name=worker.name)
    port = servers.free_port()
    site = factories.make_site(slug="e2e-alerts", port=port, protocol="iperf2")
    token = ApiToken.issue(user)
    with webhook_server(fail_first=1, status=503) as hook:
        AlertRule.objects.create(
            name="halved",
            site=site,
            vantage=vantage,
            mode="quick",
            baseline_results=3,
            consecutive=2,
            threshold_pct=30.0,
            webhook_url=hook.url,
        )
        with iperf2_on(port):
            good = run_tests(client, token, site, worker.name, 3)
        with iperf2_on(port, "-w", "8K"):
            bad = run_tests(client, token, site, worker.name, 2)
        [opened] = hook.wait_for(1, 30)
        alert = Alert.objects.get()
        assert alert.is_open and alert.opened_by_id == bad[-1].pk
        with iperf2_on(port):
            back = run_tests(client, token, site, worker.name, 2)
        rates = [m.headline_bps for m in good + bad + back]
        alert.refresh_from_db()
        assert all(m.headline_bps >= alert.threshold_bps for m in back), (rates, alert.threshold_bps)
        _, closed = hook.wait_for(2, 30)
    baseline = sorted(m.headline_bps for m in good)[1]
    assert all(m.headline_bps < baseline * 0.3 for m in bad), rates
    # The 8 KB server window shows in the results: the peer's window and rwnd-limited time.
    # (How large a share of the run that time is depends on how long the quick window ran:
    # 14-20 % on loopback since a window that drops a second transient spans 2 s, against
    # the portal's 20 % mark for "window-limited", so the mark itself is not asserted here.)
    assert all(m.rwnd_limited_pct > 5 and m.peer_window_bytes <= 16384 for m in bad), [
        (m.rwnd_limited_pct, m.peer_window_bytes) for m in bad
    ]
    alert.refresh_from_db()
    assert alert.baseline_bps == pytest.approx(baseline) and alert.closed_by_id == back[-1].pk, rates
    assert opened["json"]["event"] == "alert.opened" and closed["json"]["event"] == "alert.closed"
    assert [r["slug"] for r in opened["json"]["results"]] == [m.slug for m in bad]
    assert [r["slug"] for r in closed["json"]["results"]] == [m.slug for m in back]
    # The first POST was refused (503): the opening notice took a retry, the recovery one did not.
    assert sorted(Delivery.objects.values_list("kind", "status", "attempts")) == [
        ("closed", "sent", 1),
        ("opened", "sent", 2),
    ]
    assert hook.requests == 3
