"""A slow webhook receiver (issue 28, finding 5): a real socket server on 127.0.0.1 that sends
its reply a byte at a time. ALERT_WEBHOOK_TIMEOUT_S bounds the whole delivery, not each read,
and notices go to their own queue and worker, so the reaper on the housekeeping worker runs
on time while a receiver holds a delivery."""

import re
import time

import pytest
from django.utils import timezone

from portal import launch
from portal.alerts import delivery as delivery_mod
from portal.alerts import tasks as alert_tasks
from portal.alerts.models import Delivery
from portal.measure.models import Measurement
from portal.measure.vocab import SHARED_QUEUE, TASK_REAP
from tests import factories, servers
from tests.alerts.support import dribble, raw_server
from tests.alerts.test_delivery import alert  # noqa: F401 (fixture)
from tests.faults.cluster import wait_for

pytestmark = pytest.mark.faults

SLOW_REPLY = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"  # 45 bytes


def test_slow_webhook_delivery_ends_at_the_total_deadline(db, alert, settings):  # noqa: F811
    """Was: 36 s for a header dribbled one byte every 4 s with a 10 s (per-read) timeout."""
    settings.ALERT_WEBHOOK_TIMEOUT_S = 1.0
    with raw_server(dribble(SLOW_REPLY, 0.2)) as server:
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=server.url)
        started = time.monotonic()
        assert delivery_mod.attempt(d.pk) == "retry"
        took = time.monotonic() - started
        assert server.requests == ["POST /hook HTTP/1.1"]
    assert 1.0 <= took < 3.0, took  # every byte came within 0.2 s: only a total deadline ends it (~9 s)
    d.refresh_from_db()
    assert d.last_error == (
        f"webhook {server.url}: timed out: no complete answer within 1 s "
        "(ALERT_WEBHOOK_TIMEOUT_S bounds the whole delivery)"
    )


def test_alerts_worker_is_not_the_housekeeping_worker(settings):
    # compose and make run start both through the launcher: alert notices on a queue and a
    # worker of their own, never the shared queue's (the reaper, the watchdog, sweeps)
    compose = (servers.REPO / "docker-compose.yml").read_text()
    commands = dict(re.findall(r"^  (\w+):\n(?:    .*\n)*?    command: \[(.*)\]", compose, re.M))
    assert commands["alerts"] == '"python", "-m", "portal.launch", "alerts"'
    assert commands["housekeeping"] == '"python", "-m", "portal.launch", "housekeeping"'
    assert settings.ALERTS_QUEUE == "alerts" != SHARED_QUEUE
    alerts = launch.alerts_worker()
    assert alerts[alerts.index("-Q") + 1] == "alerts"
    assert alerts[alerts.index("--concurrency") + 1] == "2"
    assert launch.housekeeping_queues() == [SHARED_QUEUE]
    run_py = (servers.REPO / "scripts" / "run.py").read_text()
    assert '[*launch, "alerts"]' in run_py


def test_slow_webhook_never_delays_the_reaper(cluster, broker, alert, settings):  # noqa: F811
    cluster.housekeeping()
    cluster.alerts()
    stale = timezone.now() - timezone.timedelta(seconds=60)
    lost = factories.make_measurement(
        site=alert.site, vantage=alert.vantage, status="running", started_at=stale, heartbeat_at=stale
    )
    # 45 bytes, one every 0.5 s: the delivery holds its worker ALERT_WEBHOOK_TIMEOUT_S (10 s).
    with raw_server(dribble(SLOW_REPLY, 0.5)) as server:
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=server.url)
        alert_tasks.send_delivery(d.pk)
        assert server.accepted.wait(30), cluster.logs()
        sent = time.monotonic()
        broker.send_task(TASK_REAP, queue=SHARED_QUEUE)
        wait_for(lambda: Measurement.objects.filter(pk=lost.pk, status="failed").exists(), 5, "the reaper", cluster)
        reaped_after = time.monotonic() - sent
        assert Delivery.objects.get(pk=d.pk).attempts == 1  # still held by the slow receiver
    assert reaped_after < 5
    assert Measurement.objects.get(pk=lost.pk).failure_code == "worker_lost"
