"""Playwright harness: Debian's Chromium driving the portal served by pytest-django's live_server.

Every page a test opens is watched for console errors, uncaught exceptions, failed requests
and Content-Security-Policy violations; `watch.assert_clean()` fails with the full list.
"""

import os
import shutil

import pytest

from tests.browser.pwhelpers import PageWatch

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

# The backend's e2e worker fixture: a real prefork Celery worker on a queue of its own, against
# the test database, with the test's cache namespace. Yields a Worker (.name = its vantage).
from tests.e2e.conftest import celery_worker, start_worker  # noqa: E402,F401
