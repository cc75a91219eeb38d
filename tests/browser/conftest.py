"""Playwright harness: Debian's Chromium driving the portal served by pytest-django's live_server.

Every page a test opens is watched for console errors, uncaught exceptions, failed requests
and Content-Security-Policy violations; `watch.assert_clean()` fails with the full list.
"""
import os
import secrets
import shutil
import subprocess
import sys

import pytest
from django.conf import settings
from pwhelpers import ARTIFACTS, PageWatch

from tests import servers

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

@pytest.fixture
def celery_worker(live_server, quickprobe_bin):
    """A real Celery worker process on this test run's own vantage queue, using the test
    database (live_server commits, so the worker sees the rows). Yields the Vantage it
    registered."""
    from django.db import connection

    from portal.measure.models import Vantage

    db = connection.settings_dict
    user = f"{db['USER']}@" if db["USER"] else ""
    port = f":{db['PORT']}" if db["PORT"] else ""
    # A queue of our own: another test run sharing this Redis must not take our tasks.
    name = f"browser-{secrets.token_hex(4)}"
    # The worker writes progress into the cache namespace this test session reads.
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
    env = dict(os.environ, DATABASE_URL=f"postgres://{user}{db['HOST'] or '127.0.0.1'}{port}/{db['NAME']}",
               VANTAGE_NAME=name, CACHE_KEY_PREFIX=prefix, PYTHONUNBUFFERED="1")
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"celery-{name}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.celery", "worker", "-Q", f"vantage.{name}",
             "-P", "solo", "-c", "1", "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-l", "INFO", "-n", f"{name}@%h"],
            cwd=servers.REPO, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        # The worker registers its vantage when it is ready to consume.
        servers.wait_until(lambda: Vantage.objects.filter(name=name).exists(), 60, "celery worker", proc, log)
        yield Vantage.objects.get(name=name)
    finally:
        servers.stop(proc)
        import redis

        # The queue's list would otherwise stay in the shared Redis.
        redis.Redis.from_url(settings.REDIS_URL).delete(f"vantage.{name}")
