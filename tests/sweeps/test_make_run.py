"""`make run` (scripts/run.py, embedded SQLite + file-system broker) prints an admin login that
opens the admin, and its beat (DatabaseScheduler) fires a sweep defined while it runs."""

import http.cookiejar
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from tests import servers

pytestmark = pytest.mark.e2e


def _admin_login(port, password):
    """Logs into /admin/ as a browser would (CSRF cookie and token); returns the index page."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    base = f"http://127.0.0.1:{port}"
    page = opener.open(f"{base}/admin/login/?next=/admin/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    data = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token, "username": "admin", "password": password, "next": "/admin/"}
    ).encode()
    request = urllib.request.Request(f"{base}/admin/login/?next=/admin/", data=data, headers={"Referer": base})
    with opener.open(request, timeout=10) as response:
        return response.geturl(), response.read().decode()


def _beat_runs_done(db_path):
    with sqlite3.connect(db_path) as db:
        return db.execute(
            "SELECT count(*) FROM sweeps_sweeprun r JOIN sweeps_sweepcell c ON c.run_id = r.id "
            "JOIN measure_measurement m ON m.id = c.measurement_id WHERE r.\"trigger\" = 'beat' AND m.status = 'done'"
        ).fetchone()[0]


def test_make_run_prints_admin_login_and_beat_fires_sweep(tmp_path, quickprobe_bin):
    port = servers.free_port()
    env = servers.make_run_env(tmp_path)
    # DEMO_LAB=0: not this test's subject (tests/e2e/test_make_run_lab.py is), and its lab and
    # first tests would share the one vantage slot with the sweep
    env.update(
        PORT=str(port),
        VANTAGE_NAME="sweepcheck",
        DEMO_LAB="0",
    )
    proc, log = servers.start_make_run(tmp_path, env)
    try:
        servers.wait_make_run(proc, log)
        password = re.search(r"admin:    admin / (\S+) ", log.read_text()).group(1)
        url, body = _admin_login(port, password)
        assert url.endswith("/admin/") and "Sweeps" in body and "Site administration" in body

        manage_env = dict(env, ALLOW_PRIVATE_SITE_HOSTS="1")
        if not manage_env.get("SECRET_KEY"):
            manage_env["SECRET_KEY_FILE"] = str(tmp_path / "var" / "secret_key")
        created = subprocess.run(
            [
                sys.executable,
                str(servers.REPO / "manage.py"),
                "sweep",
                "create",
                "loop",
                "--every",
                "3s",
                "--duration",
                "3",
            ],
            env=manage_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert created.returncode == 0 and created.stdout == "sweep loop: 1 setting(s), every 3s\n", created
        servers.wait_until(
            lambda: _beat_runs_done(tmp_path / "var" / "portal.sqlite3") >= 1,
            90,
            "a beat-fired sweep cell done under make run",
            proc,
            log,
        )
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, log.read_text()[-3000:]
    finally:
        servers.stop(proc)
        time.sleep(0.2)
        for pid in servers.processes_with(str(tmp_path)) + servers.processes_with(f"127.0.0.1:{port}"):
            os.kill(pid, signal.SIGKILL)
