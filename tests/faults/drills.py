"""What the fault drills share: asking for a test through the API, waiting for a row's final
state within a bound, and a stock iperf3 client that keeps a server busy."""

import contextlib
import json
import subprocess
import time

from portal.measure.models import Measurement
from tests import servers
from tests.faults.cluster import TIMINGS

HEARTBEAT_S = float(TIMINGS["HEARTBEAT_TEST_LOST_S"])
INTERVAL_S = float(TIMINGS["REAPER_INTERVAL_S"])
GRACE_S = float(TIMINGS["WATCHDOG_GRACE_S"])
# A lost worker's row is failed within this of the kill: silence threshold, two reaper ticks
# (beat's and the housekeeping worker's latency) and slack for a loaded 2-core machine.
LOST_WORKER_BOUND_S = HEARTBEAT_S + 2 * INTERVAL_S + 6
# A lost task is sent again within this of its due time.
LOST_TASK_BOUND_S = GRACE_S + 2 * INTERVAL_S + 6


def request(client, token, **params):
    response = client.post(
        "/api/v1/measurements",
        data=json.dumps(params),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def row(slug):
    return Measurement.objects.get(slug=slug)


def wait_status(slug, statuses, timeout, cluster=None, what=None):
    """Waits until the row's status is one of statuses; returns the row."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = row(slug)
        if m.status in statuses:
            return m
        time.sleep(0.1)
    m = row(slug)
    logs = f"\n{cluster.logs()}" if cluster is not None else ""
    raise AssertionError(
        f"{what or slug}: still {m.status} ({m.failure_code} {m.failure_reason!r}) after "
        f"{timeout:g} s, wanted {statuses}{logs}"
    )


def wait_log(handle, text, timeout):
    servers.wait_until(
        lambda: text in handle.tail(200_000), timeout, f"{text!r} in {handle.name}'s log", handle.proc, handle.log
    )


def prober_pids(port):
    return servers.processes_with(f"quickprobe -c 127.0.0.1 -p {port} ")


@contextlib.contextmanager
def busy_server(port, seconds):
    """A stock `iperf3 -c` (rate-limited, so it costs little CPU) keeps the iperf3 server on
    port busy for `seconds`: a prober gets iperf3's 'busy' (0xFF) meanwhile."""
    proc = subprocess.Popen(
        ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-b", "10M"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(1.0)  # its test has started
        assert proc.poll() is None, "the blocking iperf3 client did not start its test"
        yield proc
    finally:
        servers.stop(proc)
