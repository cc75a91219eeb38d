"""The target misbehaves: iperf3 killed mid-test, a server that closes at once, one that sends
garbage, one that stalls. The runner (in this process) drives the real prober against a real
iperf3 or a fake server with real sockets (tests/prober/fakes.py); each row ends failed with
the prober's code and a reason that says what happened, within the test's bound, never retried
as busy."""

import subprocess
import threading
import time

import pytest

from portal.measure import runner
from tests import factories, servers
from tests.prober.fakes import FakeIperf3

pytestmark = pytest.mark.faults


def run_against(port, mode="quick", duration_s=3):
    site = factories.make_site(port=port)
    measurement = factories.make_measurement(site=site, mode=mode, duration_s=duration_s)
    started = time.monotonic()
    runner.run(measurement.pk)
    measurement.refresh_from_db()
    return measurement, time.monotonic() - started


@pytest.mark.parametrize(
    ("script", "code", "says", "bound_s"),
    [
        ("eof_before_params", "server_closed", "closed it without sending anything", 10),
        ("garbage", "protocol", "", 10),
        ("silent", "timeout", "", 15),
    ],
)
def test_misbehaving_server_fails_with_its_code(transactional_db, quickprobe_bin, script, code, says, bound_s):
    with FakeIperf3(script) as fake:
        m, took = run_against(fake.port)
    assert (m.status, m.failure_code) == ("failed", code), m.failure_reason
    assert says in m.failure_reason
    assert took < bound_s, f"{script}: took {took:.1f} s"


def test_target_iperf3_killed_mid_test_fails_with_reason(transactional_db, quickprobe_bin, tmp_path):
    port = servers.free_port()
    target = subprocess.Popen(
        ["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        servers.wait_until(lambda: servers.listening(port), 10, "iperf3 -s", target)
        killer = threading.Timer(2.0, target.kill)
        killer.start()
        m, took = run_against(port, mode="full", duration_s=10)
        killer.join()
    finally:
        servers.stop(target)
    assert m.status == "failed", (m.status, m.failure_code)
    assert m.failure_code in {"io", "protocol", "server_closed"}, (m.failure_code, m.failure_reason)
    assert m.failure_reason
    assert took < 10, f"the prober noticed the dead target only after {took:.1f} s"
