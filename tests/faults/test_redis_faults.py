"""Redis stopped and restarted under a running portal: the worker reconnects (celery 5.6; 5.7.0
died with AttributeError 'hostname'), nothing is lost, and no row stays queued or running
past its bound. Each drill runs its own redis-server, workers, housekeeping and beat."""

import time

import pytest

from portal.measure.models import ApiToken
from tests import factories
from tests.faults import drills

pytestmark = pytest.mark.faults


@pytest.fixture
def token(user):
    return ApiToken.issue(user)


@pytest.fixture
def running(cluster):
    """A vantage worker, the housekeeping worker and beat, as docker-compose runs them."""
    worker = cluster.worker()
    cluster.housekeeping()
    cluster.beat()
    return worker


def test_redis_restart_during_retry_worker_survives_and_test_finishes(
    client, token, broker, cluster, running, redis_server, iperf3_port
):
    site = factories.make_site(port=iperf3_port)
    with drills.busy_server(iperf3_port, 8):
        slug = drills.request(client, token, site=site.slug, vantage=running.vantage, duration_s=2)
        drills.wait_log(running, "retrying in", 20)
        redis_server.stop()
        time.sleep(2)
        redis_server.start()
    m = drills.wait_status(slug, {"done", "failed"}, 8 + drills.LOST_TASK_BOUND_S + 15, cluster)
    assert (m.status, m.failure_code) == ("done", ""), m.failure_reason
    assert running.alive(), running.tail()
    assert "Unrecoverable error" not in running.tail(200_000)
    # The worker consumes again after the restart: a second test runs straight through.
    again = drills.request(client, token, site=site.slug, vantage=running.vantage, duration_s=2)
    assert drills.wait_status(again, {"done", "failed"}, 30, cluster).status == "done"


def test_redis_down_during_test_then_restarted_result_stored(
    client, token, broker, cluster, running, redis_server, iperf3_port
):
    site = factories.make_site(port=iperf3_port)
    slug = drills.request(client, token, site=site.slug, vantage=running.vantage, mode="full", duration_s=6)
    drills.wait_status(slug, {"running"}, 20, cluster)
    time.sleep(1)
    redis_server.stop()  # progress writes now fail; the result goes to PostgreSQL
    time.sleep(3)
    redis_server.start()
    m = drills.wait_status(slug, {"done", "failed"}, 6 + 10 + 10, cluster)
    assert (m.status, m.failure_code) == ("done", ""), m.failure_reason
    assert m.trace.sample_count > 100
    assert running.alive(), running.tail()


def test_redis_down_while_request_posted_row_kept_and_sent_when_back(
    client, token, broker, cluster, running, redis_server, iperf3_port
):
    site = factories.make_site(port=iperf3_port)
    redis_server.stop()
    started = time.monotonic()
    slug = drills.request(client, token, site=site.slug, vantage=running.vantage, duration_s=2)
    assert time.monotonic() - started < 5, "posting a test waited too long for a dead broker"
    m = drills.row(slug)
    assert (m.status, m.dispatched_at) == ("queued", None)
    time.sleep(2)
    redis_server.start()
    m = drills.wait_status(slug, {"done", "failed"}, drills.LOST_TASK_BOUND_S + 20, cluster)
    assert (m.status, m.failure_code) == ("done", ""), m.failure_reason
    assert m.dispatched_at is not None


def test_redis_killed_during_retry_worker_survives_and_test_finishes(
    client, token, broker, cluster, running, redis_server, iperf3_port
):
    """A crash (SIGKILL), not a clean shutdown: the AOF (fsync always here) still holds the queue."""
    site = factories.make_site(port=iperf3_port)
    with drills.busy_server(iperf3_port, 6):
        slug = drills.request(client, token, site=site.slug, vantage=running.vantage, duration_s=2)
        drills.wait_log(running, "retrying in", 20)
        redis_server.kill()
        time.sleep(1)
        redis_server.start()
    m = drills.wait_status(slug, {"done", "failed"}, 6 + drills.LOST_TASK_BOUND_S + 15, cluster)
    assert (m.status, m.failure_code) == ("done", ""), m.failure_reason
    assert running.alive(), running.tail()


def test_redis_down_longer_than_vantage_offline_queued_test_still_runs(
    client, token, broker, cluster, running, redis_server, iperf3_port, settings
):
    """The vantage's worker is alive all along: its presence must not lapse while its broker
    connection is down, or the reaper would fail its queued tests as vantage_offline."""
    site = factories.make_site(port=iperf3_port)
    redis_server.stop()
    slug = drills.request(client, token, site=site.slug, vantage=running.vantage, duration_s=2)
    time.sleep(float(cluster.env["HEARTBEAT_VANTAGE_OFFLINE_S"]) + 3)
    redis_server.start()
    m = drills.wait_status(slug, {"done", "failed"}, drills.LOST_TASK_BOUND_S + 30, cluster)
    assert (m.status, m.failure_code) == ("done", ""), m.failure_reason
