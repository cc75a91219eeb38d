"""`make run`'s script on the embedded default (SQLite, file-system broker, no servers):
it serves, measures, and leaves nothing behind on Ctrl-C."""

import json
import os
import re
import signal
import time
import urllib.request

import pytest

from tests import servers

pytestmark = pytest.mark.e2e


def _api(port, token, path, data=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/{path}", data=data, headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


def test_make_run_embedded_measures_and_stops_clean(tmp_path, quickprobe_bin):
    port = servers.free_port()
    env = servers.make_run_env(tmp_path)
    # DEMO_LAB=0: the lab demo has its own test (test_make_run_lab.py)
    env.update(
        PORT=str(port),
        VANTAGE_NAME="runcheck",
        DEMO_LAB="0",
    )
    proc, log = servers.start_make_run(tmp_path, env)
    try:
        servers.wait_make_run(proc, log)
        text = log.read_text()
        token = re.search(r"export TOKEN=(\S+)", text).group(1)
        iperf = re.search(r"-> iperf3 -s on 127\.0\.0\.1:(\d+)", text).group(1)
        assert "database: sqlite3" in text and "broker: filesystem://" in text
        status, body = _api(port, token, "measurements", data=b"site=local-iperf3&duration_s=3")
        assert status == 201 and body["status"] == "queued"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, state = _api(port, token, f"measurements/{body['id']}")
            if state["status"] in ("done", "failed"):
                break
            time.sleep(0.3)
        assert state["status"] == "done", state
        assert state["headline_bps"] > 0
        proc.send_signal(signal.SIGINT)  # what Ctrl-C delivers to the script
        assert proc.wait(30) == 0, log.read_text()[-3000:]
        assert log.read_text().rstrip().endswith("[run] stopped")
        # The embedded broker keeps its exchange bindings under the var dir, not in ./control.
        assert sorted(p.name for p in (tmp_path / "var" / "broker" / "control").iterdir()) == [
            "alerts.exchange",  # alert notices' own queue, on the vantage worker (issue 28)
            "celery.exchange",
            "vantage.runcheck.exchange",
        ]
        assert not (tmp_path / "control").exists()
        # Everything it started named the var dir or the port on its command line.
        assert servers.processes_with(str(tmp_path)) == []
        assert servers.processes_with(f"127.0.0.1:{port}") == []
        assert servers.processes_with(f"iperf3 -s -B 127.0.0.1 -p {iperf} ") == []
    finally:
        servers.stop(proc)
        for pid in servers.processes_with(str(tmp_path)) + servers.processes_with(f"127.0.0.1:{port}"):
            os.kill(pid, signal.SIGKILL)
