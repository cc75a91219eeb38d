import datetime
import json

import pytest
from django.test import Client

from portal.measure.models import Measurement
from tests import factories
from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)

UTC = datetime.timezone.utc


def _at(day, hour=12, minute=0):
    return datetime.datetime(2026, 3, day, hour, minute, tzinfo=UTC)


def _done(site, vantage, when, mode="quick", **result):
    return factories.make_done_measurement(
        site=site, vantage=vantage, mode=mode, result=factories.sample_result_event(mode=mode, **result),
        created_at=when, started_at=when + datetime.timedelta(seconds=1),
        finished_at=when + datetime.timedelta(seconds=3))


def _json_script(html, element_id):
    return json.loads(html.split(f'<script id="{element_id}" type="application/json">')[1].split("</script>")[0])


@pytest.mark.parametrize("logged_in", [False, True])
def test_site_history_readable_without_login(site, vantage, user, logged_in):
    m = _done(site, vantage, _at(1))
    c = Client()
    if logged_in:
        c.force_login(user)
    response = c.get("/sites/loopback/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Loopback iperf3</h1>" in html
    assert f'<a href="/m/{m.slug}/">permalink</a>' in html
    assert '<td class="num">9.30 Gbit/s</td>' in html
    assert "1 measurement: 1 done, 0 failed, from 2026-03-01 to 2026-03-01." in html


def test_site_history_unknown_slug_404(client, db):
    assert client.get("/sites/nope/").status_code == 404


def test_site_history_chart_separates_quick_and_full(client, site, vantage):
    q = _done(site, vantage, _at(1), quick_bps=2e8, rtt_us=1500)
    f = _done(site, vantage, _at(2), mode="full", quick_mode_entered=False, quick_bps=None,
              cumulative_bps=3e8, full_bps=3e8, rtt_us=2500)
    factories.make_measurement(site=site, vantage=vantage, status="failed", created_at=_at(3))
    data = _json_script(client.get("/sites/loopback/").content.decode(), "history-data")
    x1, x2 = int(_at(1).timestamp() * 1000), int(_at(2).timestamp() * 1000)
    assert data == {
        "quick": [{"x": x1, "y": 2e8, "slug": q.slug}],
        "full": [{"x": x2, "y": 3e8, "slug": f.slug}],
        "rtt_ms": [{"x": x1, "y": 1.5, "slug": q.slug}, {"x": x2, "y": 2.5, "slug": f.slug}],
        "limit": 500,
    }


def _recent(days_ago, hour):
    day = (datetime.datetime.now(UTC) - datetime.timedelta(days=days_ago)).date()
    return datetime.datetime.combine(day, datetime.time(hour), tzinfo=UTC)


def test_site_history_time_of_day_profile_is_median_by_hour(client, site, vantage):
    for days_ago, bps in ((1, 1e8), (2, 2e8), (3, 9e8)):
        _done(site, vantage, _recent(days_ago, hour=3), quick_bps=bps)
    for days_ago, bps in ((1, 4e8), (2, 6e8)):
        _done(site, vantage, _recent(days_ago, hour=15), quick_bps=bps)
    # Older than the profile's 90 days: counted, but not in the profile.
    _done(site, vantage, _recent(91, hour=3), quick_bps=5e9)
    html = client.get("/sites/loopback/").content.decode()
    profile = _json_script(html, "profile-data")
    expected = [None] * 24
    expected[3], expected[15] = 2e8, 5e8
    counts = [0] * 24
    counts[3], counts[15] = 3, 2
    assert profile == {"stat": "median", "days": 90, "bps": expected, "n": counts}
    assert "6 measurements: 6 done, 0 failed" in html
    assert "finished tests of the last 90 days" in html


def test_site_history_table_paginates_newest_first(client, site, vantage):
    made = [factories.make_measurement(site=site, vantage=vantage, created_at=_at(1, minute=i)) for i in range(30)]
    page1 = client.get("/sites/loopback/").content.decode()
    assert page1.count("permalink</a>") == 25
    assert page1.index(made[29].slug) < page1.index(made[5].slug)
    assert made[4].slug not in page1
    assert '<a href="?page=2">older →</a>' in page1
    assert "newer" not in page1
    page2 = client.get("/sites/loopback/?page=2").content.decode()
    assert page2.count("permalink</a>") == 5
    assert made[0].slug in page2
    assert '<a href="?page=1">← newer</a>' in page2
    assert "older →" not in page2


@pytest.mark.parametrize("page", ["0", "-3", "abc", ""])
def test_site_history_bad_page_number_shows_first_page(client, site, vantage, page):
    m = factories.make_measurement(site=site, vantage=vantage)
    response = client.get(f"/sites/loopback/?page={page}")
    assert response.status_code == 200
    assert m.slug in response.content.decode()


def test_site_history_page_past_end_says_so(client, site, vantage):
    factories.make_measurement(site=site, vantage=vantage)
    html = client.get("/sites/loopback/?page=9").content.decode()
    assert "No measurements on this page." in html


def test_site_history_query_count_does_not_grow_with_rows(client, site, vantage, django_assert_num_queries):
    for i in range(40):
        _done(site, vantage, _at(1 + i % 20, hour=i % 24))
    # site, summary counts, hour profile, streams/window table, chart points, table page
    with django_assert_num_queries(6):
        client.get("/sites/loopback/")
    # Same site version: the summary and chart are cached; another table page costs two.
    with django_assert_num_queries(2):
        client.get("/sites/loopback/?page=2")
    with django_assert_num_queries(1):
        client.get("/sites/loopback/?page=2")


def test_site_history_never_loads_traces(client, site, vantage, django_assert_max_num_queries):
    _done(site, vantage, _at(1))
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        client.get("/sites/loopback/")
    assert not any("measure_measurementtrace" in q["sql"] for q in ctx.captured_queries)
    assert not any('"result"' in q["sql"] for q in ctx.captured_queries)


@pytest.mark.parametrize("logged_in", [False, True])
def test_site_history_new_measurement_visible_on_next_request(client, user, site, vantage, logged_in):
    if logged_in:
        client.force_login(user)
    first = _done(site, vantage, _at(1))
    html = client.get("/sites/loopback/").content.decode()
    assert first.slug in html and "1 measurement: 1 done, 0 failed" in html
    newer = factories.make_measurement(site=site, vantage=vantage)
    html = client.get("/sites/loopback/").content.decode()
    assert newer.slug in html and "2 measurements: 1 done, 0 failed" in html
    assert ("<span>alice</span>" in html) == logged_in


def test_site_history_unknown_slug_404_not_cached(client, site):
    assert client.get("/sites/later/").status_code == 404
    from tests.factories import make_site

    make_site(slug="later", name="Later")
    assert client.get("/sites/later/").status_code == 200


def test_site_history_older_row_changing_shows_at_once(client, user, site, vantage, django_assert_num_queries):
    # Not the newest row: a key built from the newest row alone would have missed this.
    queued = factories.make_measurement(site=site, vantage=vantage, created_at=_at(2))
    _done(site, vantage, _at(1))
    client.force_login(user)
    client.get("/sites/loopback/")
    # session, user, site: everything else is cached under the site's version
    with django_assert_num_queries(3):
        client.get("/sites/loopback/")
    Measurement.objects.filter(pk=queued.pk).update(status="failed", failure_code="timeout")
    assert '<code class="small">timeout</code>' in client.get("/sites/loopback/").content.decode()


def test_site_history_heartbeat_keeps_cached_data(client, site, vantage, django_assert_num_queries):
    running = factories.make_measurement(site=site, vantage=vantage, status="running")
    client.get("/sites/loopback/")
    Measurement.objects.filter(pk=running.pk).update(heartbeat_at=_at(2))
    with django_assert_num_queries(1):
        client.get("/sites/loopback/")


def test_site_history_site_edit_shows_at_once(client, site):
    client.get("/sites/loopback/")
    site.name = "Renamed loopback"
    site.save()
    assert "<h1>Renamed loopback</h1>" in client.get("/sites/loopback/").content.decode()


def test_site_history_settings_table_best_first(client, site, vantage):
    for days_ago, bps in ((1, 1e8), (2, 3e8)):
        _done(site, vantage, _recent(days_ago, hour=3), quick_bps=bps)
    for days_ago, bps in ((1, 8e8), (2, 6e8), (3, 9e8)):
        factories.make_done_measurement(
            site=site, vantage=vantage, streams=4, window_bytes=4 * 1024 * 1024,
            result=factories.sample_result_event(quick_bps=bps), created_at=_recent(days_ago, hour=5))
    html = client.get("/sites/loopback/").content.decode()
    table = html.split('<table class="grid compact" id="settings">')[1].split("</table>")[0]
    rows = [r for r in table.split("<tr>")[2:]]
    assert rows[0].startswith('<td class="num">4</td><td class="num">4.00 MiB</td><td class="num">3</td>'
                              '<td class="num">800.0 Mbit/s</td>')
    assert rows[1].startswith('<td class="num">1</td><td class="num">default</td><td class="num">2</td>'
                              '<td class="num">200.0 Mbit/s</td>')


def test_site_history_settings_table_hidden_with_one_setting(client, site, vantage):
    _done(site, vantage, _recent(1, hour=3))
    assert 'id="settings"' not in client.get("/sites/loopback/").content.decode()
