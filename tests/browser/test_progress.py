"""Live progress in the browser: the phase bar and the live chart follow a running test, and a
failed test shows its failure, all driven by a real worker, prober and iperf3."""

import time

import pytest
from playwright.sync_api import Error as PlaywrightError

from portal.measure.models import Measurement
from tests import factories, servers
from tests.browser.pwhelpers import FINISHED, chart_summary, log_in, request_test, wait_for_chart

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

PASSWORD = "browser-progress-pw-1"

LIVE_STATE = """() => {
  const phase = document.getElementById('phase');
  const status = document.getElementById('status');
  const el = document.getElementById('chart-live');
  const chart = el && window.Chart && Chart.getChart(el);
  return {phase: phase ? phase.textContent : null, status: status ? status.textContent.trim() : null,
          points: chart ? chart.data.datasets.map((d) => d.data.length) : null};
}"""


def test_progress_live_chart_fills_during_full_run(watched_page, live_server, iperf3_port, celery_worker):
    page = watched_page.page
    base = live_server.url
    factories.make_site(name="Loopback iperf3", slug="loopback", host="127.0.0.1", port=iperf3_port)
    factories.make_user("carol", password=PASSWORD)
    log_in(page, base, "/measure/new?site=loopback", "carol", PASSWORD)
    # A 3 s full run: six polls at 500 ms while data flows, so the chart must have grown.
    slug = request_test(page, celery_worker.name, "full", 3, streams=2)

    phases, most_points, drawn, stale = [], [0, 0, 0], None, []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if page.evaluate(FINISHED):
                break
            state = page.evaluate(LIVE_STATE)
            if state["phase"] and (not phases or phases[-1] != state["phase"]):
                phases.append(state["phase"])
            if state["phase"] not in (None, "queued") and state["status"] == "queued":
                stale.append(state)
            if state["points"] and sum(state["points"]) > sum(most_points):
                drawn = chart_summary(page, "chart-live")
                most_points = state["points"]
                watched_page.screenshot("live-progress-full")
        except PlaywrightError as exc:
            # The finished test reloads the page (HX-Refresh) under our feet.
            if "context was destroyed" not in str(exc):
                raise
        page.wait_for_timeout(100)
    page.wait_for_function(FINISHED, timeout=10_000)

    m = Measurement.objects.get(slug=slug)
    assert m.status == "done", (m.status, m.failure_code, m.failure_reason)
    assert "full" in phases, f"phases seen: {phases}"
    # The status badge follows the phase bar: data flowing means the test is running.
    assert not stale, f"status badge still 'queued' while the phase bar moved on: {stale[:3]}"
    # Every live dataset (InstBW, CumuBW, cwnd) got points and was drawn in its colour.
    assert min(most_points) > 0, f"the live chart never got samples (phases {phases})"
    assert drawn and all(ds["pixels"] > 20 for ds in drawn), drawn

    # The stored permalink: one cwnd line per stream, numbered 1..N (issue 27; iperf3's own ids
    # skip numbers and stay in the trace's JSON).
    trace = m.trace.to_dict()
    assert len(trace["streams"]) == 2
    streams = wait_for_chart(page, "chart-streams")
    assert [(ds["label"], ds["points"]) for ds in streams] == [
        (f"stream {n}", len(trace["t"])) for n in range(1, len(trace["streams"]) + 1)
    ]
    assert all(ds["pixels"] > 20 for ds in streams), streams
    watched_page.screenshot("permalink-full-2-streams")
    watched_page.assert_clean()


def test_progress_refused_target_shows_failure(watched_page, live_server, celery_worker):
    page = watched_page.page
    base = live_server.url
    # A free port nobody listens on: the prober's connect is refused.
    factories.make_site(name="Nothing here", slug="refused", host="127.0.0.1", port=servers.free_port())
    factories.make_user("dave", password=PASSWORD)
    log_in(page, base, "/measure/new?site=refused", "dave", PASSWORD)
    slug = request_test(page, celery_worker.name, "quick", 5)
    page.wait_for_function(FINISHED, timeout=60_000)

    m = Measurement.objects.get(slug=slug)
    assert (m.status, m.failure_code) == ("failed", "connect_refused")
    assert page.inner_text("#status").strip() == "failed"
    failure = page.inner_text("#failure")
    assert "connect_refused" in failure and m.failure_reason in failure
    assert page.locator("#chart-cwnd").count() == 0 and page.locator("#headline").count() == 0
    watched_page.screenshot("permalink-failed")
    watched_page.assert_clean()


def test_progress_iperf2_site_quick_test_done(watched_page, live_server, iperf2_port, celery_worker):
    page = watched_page.page
    base = live_server.url
    factories.make_site(
        name="Loopback iperf 2", slug="loopback2", host="127.0.0.1", port=iperf2_port, protocol="iperf2"
    )
    factories.make_user("frank", password=PASSWORD)
    log_in(page, base, "/measure/new?site=loopback2", "frank", PASSWORD)
    slug = request_test(page, celery_worker.name, "quick", 5)
    page.wait_for_function(FINISHED, timeout=60_000)

    m = Measurement.objects.get(slug=slug)
    assert m.status == "done", (m.status, m.failure_code, m.failure_reason)
    assert m.server_bytes is None  # iperf 2 reports nothing back to the client
    results = page.inner_text("#results")
    assert "iperf 2 does not say" in results
    assert "iperf 2" in page.inner_text("#parameters")
    bw = {ds["label"]: ds["points"] for ds in wait_for_chart(page, "chart-bw")}
    # Under BBR the chart also draws BBR's own bandwidth estimate per stream, one point a sample.
    bbr = {label: bw.pop(label) for label in list(bw) if label.startswith("BBR bw estimate")}
    assert all(points == m.trace.sample_count for points in bbr.values()), bbr
    assert bw == {"InstBW": m.trace.sample_count, "CumuBW": m.trace.sample_count}
    watched_page.assert_clean()
