"""The whole user journey in a real browser: log in, request a quick test of a site backed by a
real `iperf3 -s`, follow the live progress until done, see the charts drawn, open the site's
history and download its CSV; no console errors and no CSP violations on any page."""

import csv
import io
import re
from pathlib import Path

import pytest

from portal.measure.csvexport import MEASUREMENT_CSV_COLUMNS
from portal.measure.models import Measurement
from portal.measure.results import trace_csv_rows
from portal.measure.units import format_bps
from tests import factories
from tests.browser.pwhelpers import FINISHED, chart_summary, log_in, wait_for_chart

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

PASSWORD = "browser-flow-pw-1"


def _drawn(summary, canvas_id, expect_points=None):
    """Every dataset of the chart has points and its colour is on the canvas."""
    assert summary, f"no Chart.js chart on #{canvas_id}"
    for ds in summary:
        assert ds["points"] > 0, f"#{canvas_id} dataset {ds['label']!r} has no points: {summary}"
        assert ds["pixels"] > 20, f"#{canvas_id} dataset {ds['label']!r} is not drawn: {summary}"
        if expect_points is not None:
            assert ds["points"] == expect_points, f"#{canvas_id} {ds['label']!r}: {summary}"


def test_flow_quick_test_from_login_to_csv(watched_page, live_server, iperf3_port, celery_worker):
    page = watched_page.page
    base = live_server.url
    site = factories.make_site(
        name="Loopback iperf3", slug="loopback", host="127.0.0.1", port=iperf3_port, location="this machine"
    )
    user = factories.make_user("alice", password=PASSWORD)

    # Sites overview, anonymous.
    page.goto(f"{base}/")
    assert page.locator("#sites").get_by_role("link", name="Loopback iperf3").count() == 1
    watched_page.screenshot("sites-overview-empty")

    # The request form needs a login and comes back to the form with the site preselected.
    log_in(page, base, f"/measure/new?site={site.slug}", "alice", PASSWORD)
    assert page.input_value("#id_site") == "loopback"
    page.select_option("#id_vantage", celery_worker.name)
    page.select_option("#id_mode", "quick")
    page.fill("#id_duration_s", "5")
    page.fill("#id_streams", "1")
    watched_page.screenshot("request-form")

    # Record the htmx polls of the permalink: they must end with 286.
    polls = []
    page.on(
        "response",
        lambda r: polls.append(r.status) if r.request.headers.get("hx-request") == "true" and "/m/" in r.url else None,
    )
    page.get_by_role("button", name="Start test").click()
    page.wait_for_url(re.compile(rf"^{re.escape(base)}/m/[A-Za-z0-9_-]{{12}}/$"))
    slug = page.url.rstrip("/").rsplit("/", 1)[1]
    m = Measurement.objects.get(slug=slug)
    assert (m.site_id, m.vantage.name, m.requested_by_id, m.mode, m.duration_s, m.streams) == (
        site.pk,
        celery_worker.name,
        user.pk,
        "quick",
        5,
        1,
    )

    # Live progress: the page shows the phase bar while the worker runs the prober.
    # (On a stalled machine the test may already be done when the page first renders.)
    followed = page.locator("#progress").count() == 1
    if followed:
        page.wait_for_function(
            "() => !document.getElementById('phase') || document.getElementById('phase').textContent !== 'queued'",
            timeout=30_000,
        )
        watched_page.screenshot("live-progress")
    page.wait_for_function(FINISHED, timeout=60_000)
    m.refresh_from_db()
    assert m.status == "done", (m.status, m.failure_code, m.failure_reason)
    assert m.quick_mode_entered is True and m.quick_bps > 0
    if followed:
        assert polls and polls[-1] == 286, f"htmx polls answered {polls}; the last must be 286"
        assert set(polls[:-1]) <= {200}, polls

    # Permalink: the headline is the stored figure and every trace chart is drawn with every sample.
    headline = page.locator("#headline").inner_text().strip()
    # A quick answer (converged or at its deadline) is the headline with its error bar; one that
    # fell back is not: the run went on to -t and its average is the headline, bare.
    answered = m.quick_answered if m.quick_answered is not None else m.quick_converged
    expected = format_bps(m.quick_bps if answered is not False else m.cumulative_bps)
    if answered is not False and m.quick_ci_pct is not None:
        expected += f" ± {m.quick_ci_pct:.1f} %"
    assert headline == expected
    samples = m.trace.sample_count
    assert samples > 10
    for canvas in ("chart-bw", "chart-cwnd", "chart-rtt"):
        summary = wait_for_chart(page, canvas)
        _drawn(summary, canvas)
    bw = {ds["label"]: ds["points"] for ds in chart_summary(page, "chart-bw")}
    # Under BBR the chart also draws BBR's own bandwidth estimate per stream, one point a sample.
    bbr = {label: bw.pop(label) for label in list(bw) if label.startswith("BBR bw estimate")}
    assert all(points == samples for points in bbr.values()), bbr
    assert bw == {"InstBW": samples, "CumuBW": samples}
    assert page.locator("#chart-streams").count() == 0  # one stream: no per-stream chart
    watched_page.screenshot("permalink")

    # The trace CSV from the permalink's button: the stored trace, sample for sample.
    with page.expect_download() as info:
        page.get_by_role("link", name="Trace CSV").click()
    trace_rows = list(csv.reader(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8"))))
    expected = [[str(cell) for cell in row] for row in trace_csv_rows(m.trace)]
    assert trace_rows[0][:4] == ["t", "inst_bps", "cumu_bps", "cwnd_bytes"]
    assert len(trace_rows) == samples + 1
    assert trace_rows == expected

    # Site history: reached by the link on the permalink, charts drawn from the one result.
    page.locator(".headline a", has_text="Loopback iperf3").click()
    page.wait_for_url(f"{base}/sites/loopback/")
    assert "1 measurement: 1 done, 0 failed" in page.inner_text("#summary")
    # One result: a point in the quick series if its estimate converged, else in the full-run one.
    plotted = [ds for ds in wait_for_chart(page, "chart-throughput") if ds["points"]]
    _drawn(plotted[:1], "chart-throughput", expect_points=1)
    _drawn(wait_for_chart(page, "chart-rtt"), "chart-rtt", expect_points=1)
    wait_for_chart(page, "chart-profile")
    assert page.locator("#measurements a", has_text="permalink").count() == 1
    watched_page.screenshot("site-history")

    # The CSV export of the site: its header, and exactly our measurement's row.
    with page.expect_download() as info:
        page.get_by_role("button", name="Download CSV").click()
    download = info.value
    assert download.suggested_filename == "quickprobe-loopback-measurements.csv"
    rows = list(csv.reader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    assert rows[0] == MEASUREMENT_CSV_COLUMNS
    assert len(rows) == 2
    row = dict(zip(rows[0], rows[1]))
    assert (row["slug"], row["site"], row["vantage"], row["mode"], row["status"]) == (
        slug,
        "loopback",
        celery_worker.name,
        "quick",
        "done",
    )
    assert float(row["quick_bps"]) == m.quick_bps
    assert float(row["headline_bps"]) == m.headline_bps

    # Back to the overview: its "last quick" column links to the result, with the same figure.
    page.goto(f"{base}/")
    last_quick = page.locator(f'#sites a[href="/m/{slug}/"]')
    assert last_quick.count() == 1
    # The figure with its tag (measurement.html#quick_mark), not the error bar: a table cell is narrow.
    tag = {"converged": "converged", "deadline": "at deadline", "fell_back": "full run: not converged"}[m.quick_mark]
    assert last_quick.inner_text().strip() == f"{format_bps(m.headline_bps)} {tag}"
    watched_page.screenshot("sites-overview")

    watched_page.assert_clean()
