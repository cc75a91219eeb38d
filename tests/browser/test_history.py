"""A site's history page with a month of results: the charts hold exactly the stored points,
the table pages, and a click on a chart point opens that measurement."""

import datetime as dt
import math
from pathlib import Path

import pytest
from django.utils import timezone

from tests import factories
from tests.browser.pwhelpers import chart_summary, wait_for_chart

pytestmark = pytest.mark.browser


def _month_of_results(site, vantage, now):
    """60 finished tests twice a day (every 5th a full run) and 3 failures; returns the done rows."""
    done = []
    for i in range(60):
        created = now - dt.timedelta(hours=12 * i + 1)
        rate = 900e6 + 60e6 * math.sin(i / 3)
        if i % 5 == 0:
            result = factories.sample_result_event(
                mode="full",
                quick_mode_entered=False,
                quick_bps=None,
                cumulative_bps=rate,
                full_bps=rate,
                time_saved_pct=None,
                traffic_saved_pct=None,
                rtt_us=30_000 + 100 * i,
            )
        else:
            result = factories.sample_result_event(quick_bps=rate, cumulative_bps=rate * 0.93, rtt_us=30_000 + 100 * i)
        done.append(
            factories.make_done_measurement(
                site=site,
                vantage=vantage,
                result=result,
                mode=result["mode"],
                created_at=created,
                started_at=created,
                finished_at=created + dt.timedelta(seconds=2),
            )
        )
    for i in range(3):
        factories.make_measurement(
            site=site,
            vantage=vantage,
            status="failed",
            failure_code="connect_refused",
            failure_reason="connect to 192.0.2.1 port 5201: Connection refused",
            created_at=now - dt.timedelta(hours=12 * i + 7),
        )
    return done


def test_history_month_of_results_charts_table_and_click(watched_page, live_server):
    page = watched_page.page
    site = factories.make_site(name="Example WAN site", slug="wan", host="192.0.2.1", location="Menlo Park")
    vantage = factories.make_vantage(name="local")
    done = _month_of_results(site, vantage, timezone.now())
    quick = [m for m in done if m.mode == "quick"]

    page.goto(f"{live_server.url}/sites/wan/")
    assert page.inner_text("#summary").startswith("63 measurements: 60 done, 3 failed")
    throughput = {ds["label"]: ds for ds in wait_for_chart(page, "chart-throughput")}
    assert throughput["quick"]["points"] == 48 and throughput["full"]["points"] == 12
    assert throughput["validate"]["points"] == 0
    assert throughput["quick"]["pixels"] > 20 and throughput["full"]["pixels"] > 20, throughput
    assert [ds["points"] for ds in wait_for_chart(page, "chart-rtt")] == [60]
    wait_for_chart(page, "chart-profile")
    # Tests ran at two hours of the day only, so the profile has exactly two bars.
    hours = {(m.created_at.hour) for m in done}
    bars = page.evaluate(
        "Chart.getChart(document.getElementById('chart-profile')).data.datasets[0].data"
        ".filter((v) => v !== null).length"
    )
    assert bars == len(hours) == 2
    watched_page.screenshot("site-history-month")

    # The table: 25 rows a page, newest first, then older pages.
    assert page.locator("#measurements tbody tr").count() == 25
    page.get_by_role("link", name="older →").click()
    page.wait_for_url(f"{live_server.url}/sites/wan/?vantage=local&page=2")
    assert page.locator("#measurements tbody tr").count() == 25
    page.get_by_role("link", name="older →").click()
    page.wait_for_url(f"{live_server.url}/sites/wan/?vantage=local&page=3")
    assert page.locator("#measurements tbody tr").count() == 13
    assert page.get_by_role("link", name="older →").count() == 0

    # Clicking the newest quick point opens its permalink.
    page.goto(f"{live_server.url}/sites/wan/")
    wait_for_chart(page, "chart-throughput")
    x, y = page.evaluate("""() => {
        const el = document.getElementById('chart-throughput');
        const meta = Chart.getChart(el).getDatasetMeta(0);
        const p = meta.data[meta.data.length - 1];
        const box = el.getBoundingClientRect();
        return [box.left + p.x, box.top + p.y];
    }""")
    page.mouse.click(x, y)
    newest_quick = max(quick, key=lambda m: m.created_at)
    page.wait_for_url(f"{live_server.url}/m/{newest_quick.slug}/")
    assert chart_summary(page, "chart-bw")  # the permalink drew its trace
    watched_page.assert_clean()


def test_history_overview_links_latest_quick_and_full(watched_page, live_server):
    from portal.measure.units import format_bps

    page = watched_page.page
    wan = factories.make_site(name="Example WAN site", slug="wan", host="192.0.2.1", location="Menlo Park")
    factories.make_site(name="Idle site", slug="idle", host="192.0.2.2", location="nowhere yet")
    vantage = factories.make_vantage(name="local")
    done = _month_of_results(wan, vantage, timezone.now())
    newest_quick = max((m for m in done if m.mode == "quick"), key=lambda m: m.created_at)
    newest_full = max((m for m in done if m.mode == "full"), key=lambda m: m.created_at)

    page.goto(f"{live_server.url}/")
    rows = page.locator("#sites tbody tr")
    assert rows.count() == 2
    wan_row = rows.filter(has_text="Example WAN site")
    quick_link = wan_row.locator(f'a[href="/m/{newest_quick.slug}/"]')
    full_link = wan_row.locator(f'a[href="/m/{newest_full.slug}/"]')
    # Issue 27: marked as its permalink says (these rows say neither converged nor answered).
    assert quick_link.inner_text() == format_bps(newest_quick.quick_bps) + " quick estimate"
    assert full_link.inner_text() == format_bps(newest_full.full_bps)
    # A site without results shows dashes, not zeros.
    assert "bit/s" not in rows.filter(has_text="Idle site").inner_text()
    watched_page.screenshot("sites-overview-month")
    quick_link.click()
    page.wait_for_url(f"{live_server.url}/m/{newest_quick.slug}/")
    watched_page.assert_clean()


def test_history_csv_download_for_a_date_range(watched_page, live_server):
    import csv
    import io

    from portal.measure.models import Measurement

    page = watched_page.page
    wan = factories.make_site(name="Example WAN site", slug="wan", host="192.0.2.1")
    now = timezone.now()
    _month_of_results(wan, factories.make_vantage(name="local"), now)
    since, until = (now - dt.timedelta(days=6)).date(), (now - dt.timedelta(days=4)).date()
    expected = sorted(
        Measurement.objects.filter(site=wan, created_at__date__gte=since, created_at__date__lte=until).values_list(
            "slug", flat=True
        )
    )
    assert 4 <= len(expected) <= 8  # two a day for three days, give or take the day boundaries

    page.goto(f"{live_server.url}/sites/wan/")
    page.fill("input[name=since]", since.isoformat())
    page.fill("input[name=until]", until.isoformat())
    with page.expect_download() as info:
        page.get_by_role("button", name="Download CSV").click()
    download = info.value
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    assert sorted(r["slug"] for r in rows) == expected
    assert all(since.isoformat() <= r["created_at"][:10] <= until.isoformat() for r in rows)
    watched_page.assert_clean()
