"""Path pages, the grid and the alerts page in Chromium: a site tested from two vantages with
a window x streams sweep and validate runs; every chart is drawn (canvas pixels), the heat
map marks its optimum, a grid cell leads to its path, and nothing breaks the CSP."""

import datetime as dt

import pytest
from django.utils import timezone

from tests import factories
from tests.browser.pwhelpers import wait_for_chart

pytestmark = pytest.mark.browser

KIB = 1024
# median rate by (streams, window): one stream is window-bound, four streams fill the path.
RATES = {
    (1, 64 * KIB): 80e6,
    (1, 256 * KIB): 300e6,
    (1, 1024 * KIB): 850e6,
    (4, 64 * KIB): 310e6,
    (4, 256 * KIB): 880e6,
    (4, 1024 * KIB): 900e6,
}


def _sweep(site, vantage, now):
    made = []
    for day in range(5):
        for (streams, window), rate in RATES.items():
            when = now - dt.timedelta(days=day, hours=streams, minutes=window // KIB // 64)
            # Day 2 did not converge: its result is the full run's figure, here the same rate.
            result = factories.sample_result_event(
                quick_bps=rate * (1 + 0.01 * day),
                quick_ci_pct=1.5 + day,
                quick_converged=day != 2,
                cumulative_bps=rate * (1 + 0.01 * day),
            )
            made.append(
                factories.make_done_measurement(
                    site=site,
                    vantage=vantage,
                    result=result,
                    created_at=when,
                    streams=streams,
                    window_bytes=window,
                    window_limited=window == 64 * KIB and streams == 1,
                )
            )
    for i, err in enumerate((2.0, -3.0, 5.0, -1.0)):
        full = 850e6
        result = factories.sample_result_event(
            mode="validate",
            quick_mode_entered=True,
            quick_bps=full * (1 + err / 100),
            cumulative_bps=full,
            full_bps=full,
            validate={
                "quick_bps": full * (1 + err / 100),
                "error_pct": err,
                "quick_ci_pct": 2.0,
                "quick_converged": err != 5.0,
            },
        )
        made.append(
            factories.make_done_measurement(
                site=site, vantage=vantage, mode="validate", result=result, created_at=now - dt.timedelta(hours=5 + i)
            )
        )
    return made


def test_path_page_analyses_drawn_and_grid_leads_there(watched_page, live_server):
    from portal.alerts.models import Alert, AlertRule

    page = watched_page.page
    now = timezone.now()
    site = factories.make_site(name="Example WAN site", slug="wan", host="192.0.2.1", time_zone="America/New_York")
    near, far = factories.make_vantage(name="near"), factories.make_vantage(name="far")
    _sweep(site, near, now)
    factories.make_done_measurement(site=site, vantage=far, created_at=now - dt.timedelta(hours=1))
    Alert.objects.create(
        rule=AlertRule.objects.create(name="halved"),
        site=site,
        vantage=far,
        series="any",
        mode="quick",
        baseline_bps=1e9,
        threshold_bps=5e8,
        opened_bps=[{"slug": "x", "at": now.isoformat(), "bps": 1e8}],
    )

    # The overview links each path and flags the one in alert.
    page.goto(f"{live_server.url}/")
    assert page.locator("#sites td.paths a").all_inner_texts() == ["far ⚠", "near"]

    # Two paths: the site page lists them; choosing one shows its analyses.
    page.goto(f"{live_server.url}/sites/wan/")
    assert page.locator("#paths tbody tr").count() == 2
    page.get_by_role("link", name="near → Example WAN site").click()
    page.wait_for_url(f"{live_server.url}/sites/wan/?vantage=near")
    throughput = {ds["label"]: ds for ds in wait_for_chart(page, "chart-throughput")}
    assert throughput["quick"]["points"] == 24 and throughput["quick, not converged"]["points"] == 6
    assert throughput["validate"]["points"] == 4 and throughput["quick"]["pixels"] > 50
    # The error bars are drawn: quick points carry ci_pct and the bars add ink above the points.
    assert page.evaluate(
        "Chart.getChart(document.getElementById('chart-throughput')).data.datasets[0].data.every((p) => p.ci_pct > 0)"
    )

    lines = {ds["label"]: ds for ds in wait_for_chart(page, "chart-window-1")}
    assert {k: v["points"] for k, v in lines.items()} == {"1 stream": 3, "4 streams": 3}
    assert all(v["pixels"] > 20 for v in lines.values()), lines
    heat = page.locator("#settings-1")
    # Best is 4 x 1 MiB (~900 Mbit/s); 1 x 1 MiB is within 10 % and cheaper: the optimum.
    optimum = heat.locator("td.optimum")
    assert optimum.count() == 1 and optimum.inner_text().startswith("867.0 Mbit/s ★")
    assert heat.locator("td.limited").count() == 1
    # The optimum says its statistic and sample size (issue 27).
    assert "optimum 1 stream, window 1.00 MiB (median 867.0 Mbit/s over n = 5 runs" in page.inner_text("#optimum-1")

    profile = wait_for_chart(page, "chart-profile")
    assert len(profile) == 5 and all(ds["points"] == 24 for ds in profile)
    assert "America/New_York" in page.inner_text("figure:has(#chart-profile) figcaption")
    fig7 = {ds["label"]: ds for ds in wait_for_chart(page, "chart-fig7")}
    assert fig7["validate run"]["points"] == 3 and fig7["validate run"]["pixels"] > 20
    assert fig7["validate run, not converged (full run reported)"]["points"] == 1
    text = page.inner_text("#quick-vs-full")
    # errors 2, -3, -1 and a +5 % estimate that did not converge (quick mode reported the full run: 0)
    assert "4 validate runs" in text and "median |error| 1.5 %" in text and "1 did not converge" in text
    watched_page.screenshot("path-page")

    # The grid: two cells for the one site; the far path is flagged; a cell opens its path.
    page.goto(f"{live_server.url}/grid/")
    cells = page.locator("#grid tbody td")
    assert cells.count() == 2
    assert "alert" in cells.nth(0).get_attribute("class")
    # near's newest result (1 stream, 64 KiB: 80 Mbit/s) against the 4 before it (median 82): ok.
    assert cells.nth(1).get_attribute("class").split() == ["cell", "ok"]
    watched_page.screenshot("grid")
    cells.nth(1).locator("a").click()
    page.wait_for_url(f"{live_server.url}/sites/wan/?vantage=near")

    page.goto(f"{live_server.url}/alerts/")
    assert page.locator("#open-alerts tbody tr").count() == 1
    assert "far → Example WAN site" in page.inner_text("#open-alerts")
    watched_page.screenshot("alerts")
    watched_page.assert_clean()


def _bbr_trace(n=100):
    """A BBR trace: STARTUP, DRAIN, PROBE_BW, a PROBE_RTT dip, PROBE_BW again."""
    from tests.factories import sample_trace_dict

    trace = sample_trace_dict(n=n)
    modes = ["startup"] * 20 + ["drain"] * 5 + ["probe_bw"] * 45 + ["probe_rtt"] * 10 + ["probe_bw"] * 20
    stream = trace["streams"][0]
    stream["bbr_mode"] = modes
    stream["bbr_bw_bps"] = [min(i, 25) * 4e7 for i in range(n)]
    stream["cwnd_bytes"] = [4 * 65483 if m == "probe_rtt" else 65483 * min(i + 4, 60) for i, m in enumerate(modes)]
    return trace


def _band_pixels(page, canvas_id):
    # Pixels of the translucent mode bands (lines, text and points are drawn opaque).
    return page.eval_on_selector(
        f"#{canvas_id}",
        """(c) => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i] > 15 && d[i] < 80) n++;
        return n;
    }""",
    )


def test_permalink_error_bar_and_bbr_modes_on_cwnd_chart(watched_page, live_server):
    page = watched_page.page
    site, vantage = factories.make_site(slug="bbr-site"), factories.make_vantage(name="local")
    result = factories.sample_result_event(
        quick_bps=612e6, quick_ci_pct=2.1, quick_converged=True, elapsed_s=1.8, congestion="bbr"
    )
    m = factories.make_done_measurement(site=site, vantage=vantage, result=result, trace=_bbr_trace())
    page.goto(f"{live_server.url}/m/{m.slug}/")
    assert page.inner_text("#headline") == "612.0 Mbit/s ± 2.1 %"
    assert "converged in 1.80 s" in page.inner_text("#headline-what")
    wait_for_chart(page, "chart-cwnd")
    legend = page.inner_text("figure:has(#chart-cwnd) .bbr-legend")
    assert legend.split(": ")[-1].split() == ["startup", "drain", "probe_bw", "probe_rtt"]
    # The bands cover the chart area: many times the translucent pixels (grid lines) of the RTT
    # chart, which has none (measured: ~88,000 against ~7,000).
    assert _band_pixels(page, "chart-cwnd") > 5 * _band_pixels(page, "chart-rtt")
    bw = {ds["label"]: ds for ds in wait_for_chart(page, "chart-bw")}
    assert bw["BBR bw estimate (stream 1)"]["points"] == 100
    watched_page.screenshot("permalink-bbr-error-bar")
    watched_page.assert_clean()
