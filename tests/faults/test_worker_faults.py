"""kill -9 of a worker (main process, one pool child, the whole group) mid-test and mid-retry,
and a PostgreSQL backend terminated under a running test. The housekeeping worker and beat
are separate processes, so a lost vantage worker is found with no new request arriving."""

import os
import signal
import time

import pytest
from django.db import connection

from portal.measure.models import ApiToken, Measurement
from tests import factories, servers
from tests.faults import drills

pytestmark = pytest.mark.faults


@pytest.fixture
def token(user):
    return ApiToken.issue(user)


@pytest.fixture
def running(cluster):
    worker = cluster.worker()
    cluster.housekeeping()
    cluster.beat()
    return worker


def start_long_test(client, token, worker, port, duration_s=20):
    site = factories.make_site(port=port)
    slug = drills.request(client, token, site=site.slug, vantage=worker.vantage, mode="full", duration_s=duration_s)
    drills.wait_status(slug, {"running"}, 20)
    servers.wait_until(lambda: drills.prober_pids(port), 10, "the prober")
    time.sleep(1)
    return slug


def assert_lost_worker_reaped(slug, killed_at, port, cluster):
    m = drills.wait_status(slug, {"done", "failed"}, drills.LOST_WORKER_BOUND_S + 2, cluster)
    took = time.monotonic() - killed_at
    assert (m.status, m.failure_code) == ("failed", "worker_lost"), m.failure_reason
    assert "no heartbeat from the worker" in m.failure_reason
    assert took <= drills.LOST_WORKER_BOUND_S, f"reaped {took:.1f} s after the kill"
    servers.wait_until(lambda: not drills.prober_pids(port), 10, "the orphaned prober gone")


def test_kill_whole_worker_group_mid_test_row_failed_worker_lost(client, token, cluster, running, broker, iperf3_port):
    slug = start_long_test(client, token, running, iperf3_port)
    running.kill(group=True)
    assert_lost_worker_reaped(slug, time.monotonic(), iperf3_port, cluster)


def test_kill_pool_child_mid_test_row_failed_worker_lost(client, token, cluster, running, broker, iperf3_port):
    slug = start_long_test(client, token, running, iperf3_port)
    m = drills.row(slug)
    # The pool child running the test is the prober's parent.
    (prober,) = drills.prober_pids(iperf3_port)
    with open(f"/proc/{prober}/stat") as f:
        child = int(f.read().rsplit(")", 1)[1].split()[1])
    assert child in running.children()
    os.kill(child, signal.SIGKILL)
    assert_lost_worker_reaped(slug, time.monotonic(), iperf3_port, cluster)
    assert running.alive(), "the worker's main process should replace its pool child and carry on"
    # ... and run the next test.
    again = drills.request(client, token, site=m.site.slug, vantage=running.vantage, duration_s=2)
    assert drills.wait_status(again, {"done", "failed"}, 30, cluster).status == "done"


def test_kill_worker_main_process_mid_test_no_row_left_running(client, token, cluster, running, broker, iperf3_port):
    slug = start_long_test(client, token, running, iperf3_port, duration_s=8)
    running.kill(group=False)
    killed_at = time.monotonic()
    # The pool child may finish the test it holds (done) or die with its parent (worker_lost);
    # either way the row ends within the test's own time plus the lost-worker bound.
    m = drills.wait_status(slug, {"done", "failed"}, 8 + 10 + drills.LOST_WORKER_BOUND_S, cluster)
    assert m.status == "done" or m.failure_code == "worker_lost", (m.status, m.failure_code, m.failure_reason)
    assert time.monotonic() - killed_at <= 8 + 10 + drills.LOST_WORKER_BOUND_S
    servers.wait_until(lambda: not drills.prober_pids(iperf3_port), 15, "no prober left")
    assert not Measurement.objects.filter(status__in=("queued", "running")).exists()


def test_kill_worker_group_mid_retry_task_resent_and_done(client, token, cluster, running, broker, iperf3_port):
    site = factories.make_site(port=iperf3_port)
    with drills.busy_server(iperf3_port, 6):
        slug = drills.request(client, token, site=site.slug, vantage=running.vantage, duration_s=2)
        drills.wait_log(running, "retrying in", 20)
        running.kill(group=True)
        # The supervisor (docker's restart policy) brings the vantage's worker back.
        cluster.worker(vantage=running.vantage)
    m = drills.wait_status(slug, {"done", "failed"}, 6 + drills.LOST_TASK_BOUND_S + 15, cluster)
    assert (m.status, m.failure_code) == ("done", ""), m.failure_reason
    assert m.dispatch_count >= 1, "the watchdog should have sent the lost retry again"


def test_postgres_backend_terminated_mid_test_result_still_stored(client, token, cluster, running, broker, iperf3_port):
    slug = start_long_test(client, token, running, iperf3_port, duration_s=6)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND application_name NOT LIKE 'pytest%%'"
        )
        terminated = [row[0] for row in cursor.fetchall()]
    assert any(terminated), "no worker backend to terminate"
    m = drills.wait_status(slug, {"done", "failed"}, 6 + 10 + 5, cluster)
    assert (m.status, m.failure_code) == ("done", ""), m.failure_reason
    assert running.alive()
