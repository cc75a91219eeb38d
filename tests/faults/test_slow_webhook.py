"""A slow webhook receiver (issue 28, finding 5): a real socket server on 127.0.0.1 that sends
its reply a byte at a time. ALERT_WEBHOOK_TIMEOUT_S bounds the whole delivery, not each read,
and notices go to their own queue and worker, so the reaper on the housekeeping worker runs
on time while a receiver holds a delivery."""

import re
import shlex
import time

import pytest
from django.utils import timezone

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


def test_compose_alerts_worker_is_not_the_housekeeping_worker(settings):
    compose = (servers.REPO / "docker-compose.yml").read_text()
    queues = {
        service: re.search(r'"-Q", "([^"]+)"', block).group(1)
        for service, block in re.findall(r"^  (\w+):\n((?:    .*\n)+)", compose, re.M)
        if '"-Q"' in block
    }
    assert settings.ALERTS_QUEUE == "alerts" != SHARED_QUEUE
    assert queues == {"housekeeping": SHARED_QUEUE, "alerts": "alerts"}


def _alerts_worker(cluster):
    """The `alerts` service's command from docker-compose.yml, against the drill's Redis."""
    compose = (servers.REPO / "docker-compose.yml").read_text()
    block = re.search(r"^  alerts:\n((?:    .*\n)+)", compose, re.M).group(1)
    argv = shlex.split(re.search(r"command: \[(.*)\]", block).group(1).replace(",", " "))
    assert argv[:3] == ["celery", "-A", "portal"]
    args = [a.replace("alerts@%h", f"alerts-{time.monotonic_ns()}@%h") for a in argv[3:]]
    return cluster._start("alerts", [*args, "--without-heartbeat"])


def test_slow_webhook_never_delays_the_reaper(cluster, broker, alert, settings):  # noqa: F811
    cluster.housekeeping()
    _alerts_worker(cluster)
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
