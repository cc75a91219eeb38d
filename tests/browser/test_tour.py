"""The README's tour (docs/screenshots/), taken from `make run`'s own pages: its demo sites
(loopback, and with root the path lab's emulated WAN path), its first real tests, a quick
answer with its interval, a validate run and a site's history. `make screenshots` runs this
with SCREENSHOTS_DIR=docs/screenshots; otherwise the pictures land in test-artifacts/ only.

It also checks what the pictures must show: the demo note on the front page, a quick answer
with its 95 % interval, a validate run's quick figure in one row, and time axes that end with
the run."""

import os
import re
import signal
import sys
import time

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests import servers
from tests.browser.pwhelpers import FINISHED, log_in, request_test, wait_for_chart

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

sys.path.insert(0, str(servers.REPO / "prober" / "lab"))
import labctl  # noqa: E402

PASSWORD = "tour-demo-pw-1"
LIVE_POINTS = """() => {
  const el = document.getElementById('chart-live');
  const chart = el && window.Chart && Chart.getChart(el);
  return chart ? Math.min(...chart.data.datasets.map((d) => d.data.length)) : 0;
}"""
AXIS_END = """() => {
  const box = document.querySelector('.charts');
  return ['chart-cwnd', 'chart-bw', 'chart-rtt'].map((id) => Chart.getChart(document.getElementById(id)).scales.x.max)
    .concat([parseFloat(box.getAttribute('data-elapsed-s'))]);
}"""


@pytest.fixture
def make_run(tmp_path):
    """scripts/run.py as `make run` starts it, on the embedded default; yields (base URL, log
    text, vantage); stopped with SIGINT (Ctrl-C) at the end."""
    port = servers.free_port()
    env = servers.make_run_env(tmp_path)
    env.update(
        PORT=str(port),
        VANTAGE_NAME="tour",
        DEMO_PASSWORD=PASSWORD,
    )
    proc, log = servers.start_make_run(tmp_path, env)
    try:
        servers.wait_make_run(proc, log)
        yield f"http://127.0.0.1:{port}", log.read_text(), "tour"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, log.read_text()[-3000:]
    finally:
        servers.stop(proc)
        for pid in servers.processes_with(str(tmp_path)):
            os.kill(pid, signal.SIGKILL)


def _open_finished(page, url):
    page.goto(url)
    page.wait_for_function(FINISHED, timeout=60_000)
    page.goto(url)  # the stored page, not the one the poll swapped into
    assert page.inner_text("#status").strip() == "done", page.inner_text("main")


def test_tour_from_make_run_pages(watched_page, make_run):
    base, log, vantage = make_run
    page = watched_page.page
    first = dict(re.findall(r"first:    a quick test of (\S+) is queued: \S+/m/([\w-]+)/", log))
    lab = labctl.lab_unavailable_reason() is None
    assert sorted(first) == (["lab-wan", "local-iperf3"] if lab else ["local-iperf3"]), log
    wan = "lab-wan" if lab else "local-iperf3"

    # The first tests' permalinks, once done: the WAN path's quick answer is the README's picture.
    _open_finished(page, f"{base}/m/{first['local-iperf3']}/")
    wait_for_chart(page, "chart-cwnd")
    watched_page.screenshot("permalink-quick-loopback")
    _open_finished(page, f"{base}/m/{first[wan]}/")
    wait_for_chart(page, "chart-cwnd")
    answer = page.inner_text("#quick-answer")
    assert re.search(r"\(95 %: .+\), answered in ", answer), answer
    if lab:
        assert "Time saved" in page.inner_text("#results")
    watched_page.screenshot("permalink-quick")

    page.goto(f"{base}/")
    notes = page.inner_text("main")
    if lab:
        assert "emulated WAN: 100 Mbit/s, 40 ms RTT, 500 kB buffer (one BDP), MTU 1500" in notes
    else:
        assert f"needs the path lab, and {labctl.lab_unavailable_reason()}" in notes
    watched_page.screenshot("sites-overview")

    log_in(page, base, f"/measure/new?site={wan}", "demo", PASSWORD)
    watched_page.screenshot("request-form")
    page.fill("#id_duration_s", "99")
    page.get_by_role("button", name="Start test").click()
    page.wait_for_selector("#errors-duration_s")
    watched_page.screenshot("request-form-error")
    # The refused form's 400, which Chromium also logs, is the one expected complaint.
    watched_page.bad_responses.clear()
    watched_page.console_errors = [e for e in watched_page.console_errors if "status of 400" not in e]

    # A validate run on the WAN path: its live progress, then its page.
    page.goto(f"{base}/measure/new?site={wan}")
    slug = request_test(page, vantage, "validate", 5)
    live_shot, deadline = False, time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if page.evaluate(FINISHED):
                break
            if page.evaluate(LIVE_POINTS) >= 25:  # half a second of samples drawn
                watched_page.screenshot("live-progress")
                live_shot = True
                break
        except PlaywrightError as exc:
            if "context was destroyed" not in str(exc):  # the finished test reloads the page
                raise
        page.wait_for_timeout(100)
    assert live_shot, "the validate run finished before its live chart had half a second of samples"
    _open_finished(page, f"{base}/m/{slug}/")
    wait_for_chart(page, "chart-cwnd")
    wait_for_chart(page, "chart-rtt")
    results = page.inner_text("#results")
    assert results.count("Quick on the same run") == 1 and "Quick estimate" not in results, results
    ends = page.evaluate(AXIS_END)
    assert ends[-1] > 4.5 and ends[:-1] == [pytest.approx(ends[-1])] * 3, ends  # not rounded up to 6
    watched_page.screenshot("permalink-validate")

    page.goto(f"{base}/sites/{wan}/")
    page.wait_for_load_state()
    watched_page.screenshot("site-history")
    watched_page.assert_clean()
