"""Playwright harness: Debian's Chromium driving the portal served by pytest-django's live_server.

Every page a test opens is watched for console errors, uncaught exceptions, failed requests
and Content-Security-Policy violations; `watch.assert_clean()` fails with the full list.
"""
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from pwhelpers import ARTIFACTS, PageWatch

REPO = Path(__file__).resolve().parents[2]

# Playwright's sync API runs an event loop in this thread; Django then refuses ORM calls from
# it as "async-unsafe" although they are ordinary blocking calls made between page actions.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium():
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium package (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def watched_page(request, chromium):
    """A fresh context (no cookies) and a watched page; yields the PageWatch. A failing test
    leaves a screenshot of where the page was, and what it complained about, in test-artifacts/."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    watch = PageWatch(page)
    try:
        yield watch
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            try:
                path = watch.screenshot(f"FAILED-{request.node.name}")
                print(f"page at failure: {page.url}, screenshot {path}, problems {watch.problems()}")
            except Exception as exc:  # the page may be gone; the test's own error matters more
                print(f"no failure screenshot: {exc}")
        context.close()


# --- real services the flow needs -------------------------------------------------------------

def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port):
    """True once something listens on 127.0.0.1:port. Read from /proc rather than by
    connecting: iperf3 takes any connection as a client and logs an error for it."""
    want = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as f:
        return any(line.split()[1] == want and line.split()[3] == "0A" for line in list(f)[1:])


def _wait_until(predicate, timeout, what, proc=None, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.05)
    tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
    status = f"exited with {proc.returncode}" if proc is not None and proc.poll() is not None else "still running"
    pytest.fail(f"{what} not ready within {timeout} s ({status}); log tail:\n{tail}")


def _stop(proc, timeout=10):
    """Ends a process we started and everything in its session (the worker's prober)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout)
        except ProcessLookupError:
            pass


@pytest.fixture
def iperf3_port():
    """A stock `iperf3 -s` on a free loopback port; yields the port."""
    port = _free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"iperf3-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)], stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until(lambda: _listening(port), 10, f"iperf3 -s on port {port}", proc, log)
        yield port
    finally:
        _stop(proc)


@pytest.fixture
def celery_worker(live_server):
    """A real Celery worker process on this test run's own vantage queue, using the test
    database (live_server commits, so the worker sees the rows). Yields the Vantage it
    registered."""
    from django.db import connection

    from portal.measure.models import Vantage

    prober = Path(settings.QUICKPROBE_BIN)
    if not os.access(prober, os.X_OK):
        pytest.fail(f"{prober} is missing: build the prober first (`make prober`; `make test` does)")
    db = connection.settings_dict
    user = f"{db['USER']}@" if db["USER"] else ""
    port = f":{db['PORT']}" if db["PORT"] else ""
    # A queue of our own: another test run sharing this Redis must not take our tasks.
    name = f"browser-{secrets.token_hex(4)}"
    env = dict(os.environ, DATABASE_URL=f"postgres://{user}{db['HOST'] or '127.0.0.1'}{port}/{db['NAME']}",
               VANTAGE_NAME=name, PYTHONUNBUFFERED="1")
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"celery-{name}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.celery", "worker", "-Q", f"vantage.{name}",
             "-P", "solo", "-c", "1", "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-l", "INFO", "-n", f"{name}@%h"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        # The worker registers its vantage when it is ready to consume.
        _wait_until(lambda: Vantage.objects.filter(name=name).exists(), 60, "celery worker", proc, log)
        yield Vantage.objects.get(name=name)
    finally:
        _stop(proc)
