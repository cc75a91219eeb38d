"""`make run` (scripts/run.py) runs beat, the housekeeping worker and the vantage's worker as
separate processes: kill -9 of the vantage worker's whole group mid-test leaves no orphaned
scheduler, the lost test is failed within the reaper's bound with no new request arriving,
and the worker is started again and measures."""

import json
import os
import re
import signal
import time
import urllib.request

import pytest

from tests import servers
from tests.faults import drills
from tests.faults.cluster import TIMINGS

pytestmark = pytest.mark.faults


def _api(port, token, path, data=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/{path}", data=data, headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _wait_finished(port, token, slug, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _api(port, token, f"measurements/{slug}")
        if state["status"] in ("done", "failed"):
            return state, time.monotonic()
        time.sleep(0.2)
    raise AssertionError(f"{slug} not finished within {timeout} s: {state}")


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:  # gone meanwhile
        return ""


def _children(parent, needle):
    """Live children of parent whose command line holds needle (others may run their own)."""
    pids = []
    for pid in servers.processes_with(needle):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                    pids.append(pid)
        except OSError:
            continue
    return pids


def test_make_run_worker_killed_mid_test_reaped_and_restarted(tmp_path, quickprobe_bin):
    port = servers.free_port()
    env = servers.make_run_env(tmp_path)
    # DEMO_LAB=0: the lab demo has its own test (tests/e2e/test_make_run_lab.py)
    env.update(
        TIMINGS,
        PORT=str(port),
        VANTAGE_NAME="runfault",
        DEMO_LAB="0",
    )
    proc, log = servers.start_make_run(tmp_path, env)
    try:
        servers.wait_make_run(proc, log)
        token = re.search(r"export TOKEN=(\S+)", log.read_text()).group(1)
        iperf = int(re.search(r"-> iperf3 -s on 127\.0\.0\.1:(\d+)", log.read_text()).group(1))
        # The launcher (portal/launch.py) execs Celery once Django is set up: wait for that.
        servers.wait_until(
            lambda: _children(proc.pid, "-A portal beat") and _children(proc.pid, "-n runfault@"),
            30,
            "beat and the vantage worker exec'd by the launcher",
            proc,
            log,
        )
        beats = _children(proc.pid, "-A portal beat")
        workers = _children(proc.pid, "-n runfault@")
        assert len(beats) == 1, f"beat should run as a process of its own: {[_cmdline(p) for p in beats]}"
        assert all(" -B " not in _cmdline(pid) for pid in workers)
        (leader,) = workers  # the worker's main process, leader of its process group

        body = _api(port, token, "measurements", data=b"site=local-iperf3&mode=full&duration_s=20")
        # make run queues its own first test of the loopback site: ours runs after it, so wait
        # for ours to be the one running (killing the worker during the first would drill that).
        servers.wait_until(
            lambda: (
                _api(port, token, f"measurements/{body['id']}")["status"] == "running" and drills.prober_pids(iperf)
            ),
            60,
            "our test's prober running",
        )
        time.sleep(1)
        os.killpg(leader, signal.SIGKILL)
        killed_at = time.monotonic()
        state, ended_at = _wait_finished(port, token, body["id"], drills.LOST_WORKER_BOUND_S + 5)
        assert (state["status"], state["failure_code"]) == ("failed", "worker_lost"), (state, log.read_text()[-3000:])
        assert ended_at - killed_at <= drills.LOST_WORKER_BOUND_S, log.read_text()[-3000:]
        assert _children(proc.pid, "-A portal beat") == beats, "beat is untouched by the worker's death"
        servers.wait_until(lambda: "celery worker exited with status" in log.read_text(), 10, "restart noticed")
        again = _api(port, token, "measurements", data=b"site=local-iperf3&duration_s=2")
        state, _ = _wait_finished(port, token, again["id"], 60)
        assert state["status"] == "done", state
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, log.read_text()[-3000:]
        assert servers.processes_with(str(tmp_path)) == []
    finally:
        servers.stop(proc)
        for pid in servers.processes_with(str(tmp_path)) + servers.processes_with(f"127.0.0.1:{port}"):
            os.kill(pid, signal.SIGKILL)
