"""Issue 27 in Chromium: time axes read UTC (and say so) in a browser far from UTC, the
permalink's charts number streams 1..N with binary cwnd ticks, a rate axis fitted to the
measured rates and the quick window shaded; the request form keeps its wording after an error;
"Test this site again" carries the permalink's settings."""

import datetime as dt

import pytest

from portal.measure.models import Measurement
from tests import factories
from tests.browser.pwhelpers import PageWatch, log_in, wait_for_chart

pytestmark = pytest.mark.browser

PASSWORD = "browser-truth-pw-1"


@pytest.fixture
def la_page(chromium):
    """A watched page in a browser whose zone is Los Angeles (UTC-8 in November)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, timezone_id="America/Los_Angeles")
    context.set_default_timeout(15_000)
    watch = PageWatch(context.new_page())
    yield watch
    context.close()


def _chart(page, canvas_id, script):
    return page.evaluate(f"(id) => {{ const c = Chart.getChart(document.getElementById(id)); {script} }}", canvas_id)


def test_path_time_axes_read_utc_in_los_angeles(la_page, live_server):
    page = la_page.page
    site = factories.make_site(name="Loopback iperf3", slug="loopback")
    vantage = factories.make_vantage(name="local")
    at = dt.datetime(2026, 11, 20, 18, 30, tzinfo=dt.timezone.utc)
    for day in range(3):
        factories.make_done_measurement(site=site, vantage=vantage, created_at=at - dt.timedelta(days=day))
    page.goto(f"{live_server.url}/sites/loopback/?vantage=local")
    assert page.evaluate("new Date(Date.UTC(2026, 10, 20, 18, 30)).getHours()") == 10  # the browser is in LA
    for canvas in ("chart-throughput", "chart-rtt"):
        wait_for_chart(page, canvas)
        axis = _chart(
            page,
            canvas,
            """const p = c.data.datasets[0].data.find((d) => d.at === Date.UTC(2026, 10, 20, 18, 30));
               return {title: c.options.scales.x.title.text,
                       shown: c.scales.x._adapter.format(p.x, 'HH:mm'),
                       tooltip: c.options.plugins.tooltip.callbacks.title([{raw: p}]),
                       ticks: c.scales.x.ticks.map((t) => t.label).join(' | ')};""",
        )
        assert axis["title"] == "time of the test (UTC)"
        assert axis["shown"] == "18:30"  # not LA's 10:30
        assert axis["tooltip"] == "2026-11-20 18:30 UTC"
        assert axis["ticks"] and not any(word in axis["ticks"] for word in ("AM", "PM", "a.m.", "p.m."))
    la_page.screenshot("path-utc-axes-los-angeles")
    la_page.assert_clean()


def _bbr_trace(n=100):
    trace = factories.sample_trace_dict(n=n, streams=(1, 3, 4, 5))
    for s in trace["streams"]:
        # BBR's estimate spikes to 300 Gbit/s while InstBW stays near 100 Gbit/s.
        s["bbr_mode"] = ["startup"] * 10 + ["probe_bw"] * (n - 10)
        s["bbr_bw_bps"] = [3e11 if i % 20 == 5 else 9e10 for i in range(n)]
    return trace


def test_permalink_charts_streams_ticks_rate_axis_and_quick_window(watched_page, live_server):
    page = watched_page.page
    site = factories.make_site(name="Loopback iperf3", slug="loopback")
    m = factories.make_done_measurement(
        site=site,
        vantage=factories.make_vantage(name="local"),
        trace=_bbr_trace(),
        result=factories.sample_result_event(quick_converged=True, quick_window_s=1.0, elapsed_s=1.86),
        streams=4,
    )
    page.goto(f"{live_server.url}/m/{m.slug}/")
    wait_for_chart(page, "chart-streams")
    legend = _chart(page, "chart-streams", "return c.data.datasets.map((d) => d.label);")
    assert legend == ["stream 1", "stream 2", "stream 3", "stream 4"]  # iperf3's ids were 1, 3, 4, 5
    for canvas in ("chart-cwnd", "chart-streams"):
        wait_for_chart(page, canvas)
        ticks = _chart(page, canvas, "return c.scales.y.ticks.map((t) => [t.value, t.label]);")
        step = ticks[1][0] - ticks[0][0]
        assert step & (step - 1) == 0 and 3 <= len(ticks) <= 9, ticks  # a power of two, a few ticks
        assert all(value % step == 0 for value, _ in ticks)
        assert all("." not in label or label.split(" ")[0].rstrip("0") == label.split(" ")[0] for _, label in ticks)
    wait_for_chart(page, "chart-bw")
    bw = _chart(
        page,
        "chart-bw",
        "return {max: c.scales.y.max, labels: c.data.datasets.map((d) => d.label), band: c.options.plugins.band};",
    )
    # InstBW peaks at 100 Gbit/s (1e9 x 100 samples): 110 Gbit/s rounds up to 120, not 300.
    assert bw["max"] == pytest.approx(1.2e11)
    assert bw["labels"][2] == "BBR bw estimate (stream 1; clipped at the top)"
    assert bw["band"] == {"from": 0.86, "to": 1.86, "label": "quick window"}
    watched_page.screenshot("permalink-bbr-4-streams")
    watched_page.assert_clean()


def test_form_after_an_error_and_test_again_carries_settings(watched_page, live_server):
    page = watched_page.page
    base = live_server.url
    site = factories.make_site(name="Loopback iperf3", slug="loopback")
    vantage = factories.make_vantage(name="local")
    factories.make_user("erin", password=PASSWORD)
    m = factories.make_done_measurement(
        site=site, vantage=vantage, mode="full", duration_s=7, streams=4, window_bytes=262144, congestion="cubic"
    )
    log_in(page, base, "/measure/new?site=loopback", "erin", PASSWORD)
    labels_before = page.locator("form.params label").all_inner_texts()
    help_before = page.locator("form.params .help").all_inner_texts()
    page.select_option("#id_vantage", "local")
    page.fill("#id_duration_s", "0")
    page.get_by_role("button", name="Start test").click()
    page.wait_for_load_state()
    assert page.locator("form.params label").all_inner_texts() == labels_before
    assert "Duration (-t)" in labels_before and "Streams (-P)" in labels_before
    assert page.locator("form.params .help").all_inner_texts() == help_before
    assert page.inner_text("#errors-duration_s") == "duration (-t) 0 is out of range: allowed 1 to 60 seconds."
    watched_page.bad_responses.clear()  # the refused form's 400 is the expected answer
    watched_page.console_errors.clear()

    page.goto(f"{base}/m/{m.slug}/")
    page.click("#test-again")
    page.wait_for_url(f"{base}/measure/new?**")
    assert page.input_value("#id_site") == "loopback"
    assert page.input_value("#id_vantage") == "local"
    assert page.input_value("#id_mode") == "full"
    assert page.input_value("#id_duration_s") == "7"
    assert page.input_value("#id_streams") == "4"
    assert page.input_value("#id_window") == "256K"
    assert page.input_value("#id_congestion") == "cubic"
    assert Measurement.objects.count() == 1
    watched_page.assert_clean()
