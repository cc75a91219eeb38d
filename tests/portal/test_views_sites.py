import datetime

import pytest
from django.test import Client
from django.utils import timezone

from tests import factories
from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)


def _ago(days=0, hours=0):
    return timezone.now() - datetime.timedelta(days=days, hours=hours)


def _done(site, vantage, when, **result):
    return factories.make_done_measurement(
        site=site,
        vantage=vantage,
        result=factories.sample_result_event(**result),
        created_at=when,
        finished_at=when,
        mode=result.get("mode", "quick"),
    )


@pytest.fixture
def overview(site, vantage):
    """One site with known latest quick / full results and a +100 % week-on-weeks trend."""
    _done(site, vantage, _ago(days=10), quick_bps=100e6)
    _done(site, vantage, _ago(days=12), quick_bps=100e6)
    _done(
        site,
        vantage,
        _ago(days=3),
        mode="full",
        quick_mode_entered=False,
        quick_bps=None,
        cumulative_bps=150e6,
        full_bps=150e6,
    )
    _done(site, vantage, _ago(hours=2), quick_bps=250e6)
    latest = _done(site, vantage, _ago(hours=1), quick_bps=123.4e6)
    # A failed and a queued test are newer still but have no result to show.
    factories.make_measurement(site=site, vantage=vantage, status="failed", failure_code="timeout")
    factories.make_measurement(site=site, vantage=vantage)
    return latest


@pytest.mark.parametrize("logged_in", [False, True])
def test_sites_overview_lists_latest_results(overview, site, user, logged_in):
    c = Client()
    if logged_in:
        c.force_login(user)
    response = c.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<td><a href="/sites/loopback/">Loopback iperf3</a></td>' in html
    # Issue 27: the figure carries its permalink's mark (this prober row said neither converged
    # nor answered: an older quick estimate).
    assert f'<a href="/m/{overview.slug}/">123.4 Mbit/s <span class="tag" data-mark="estimate"' in html
    assert "150.0 Mbit/s</a>" in html
    # Last 7 days: 150, 250, 123.4 -> mean 174.47; the 21 days before: 100, 100 -> +74.5 %.
    assert '<span class="up">▲ +74.5 %</span>' in html
    assert '<a class="button secondary" href="/measure/new?site=loopback">Test now</a>' in html


def test_sites_overview_hides_disabled_sites(client, site, make_site):
    make_site(name="Retired", slug="retired", enabled=False)
    html = client.get("/").content.decode()
    assert "Loopback iperf3" in html
    assert "Retired" not in html


def test_sites_overview_site_without_results_shows_dashes(client, site):
    html = client.get("/").content.decode()
    assert '<td class="num">–</td>' in html
    assert '<span class="muted">–</span>' in html


def test_sites_overview_empty_says_so(client, db):
    assert "No sites are registered yet." in client.get("/").content.decode()


def test_sites_overview_one_query_for_the_table(client, site, vantage, make_site, django_assert_num_queries):
    for n in range(4):
        other = make_site(name=f"Other {n}", slug=f"other-{n}")
        _done(other, vantage, _ago(hours=n + 1), quick_bps=1e9)
        _done(other, vantage, _ago(days=9), quick_bps=2e9)
    # The sites' data versions, the table, the trend means of all sites in one grouped query,
    # the versions again and the paths of every site, and the open alerts that flag paths ...
    with django_assert_num_queries(6):
        response = client.get("/")
    assert response.content.decode().count('<span class="down">▼ -50.0 %</span>') == 4
    # ... kept while no site changes: the versions (twice) and the alerts, whatever the number of sites.
    with django_assert_num_queries(3):
        client.get("/")
    newest = _done(site, vantage, _ago(hours=1), quick_bps=1e9)
    assert newest.slug not in response.content.decode()
    assert newest.slug in client.get("/").content.decode()  # a new result is on the next view


def test_sites_overview_trend_flat_and_down(client, site, vantage, make_site):
    _done(site, vantage, _ago(days=1), quick_bps=102e6)
    _done(site, vantage, _ago(days=8), quick_bps=100e6)
    html = client.get("/").content.decode()
    assert '<span class="flat">▶ 2.0 %</span>' in html


def test_base_layout_htmx_config_keeps_json_scripts(client, db):
    html = client.get("/").content.decode()
    # allowScriptTags must stay on (htmx's default): off, htmx strips the json_script data
    # from every swapped progress partial.
    assert '<meta name="htmx-config" content=\'{"includeIndicatorStyles": false, "allowEval": false}\'>' in html
    assert "allowScriptTags" not in html
    assert "{#" not in html and "endcomment" not in html
    assert '<link rel="icon" href="data:,">' in html
