"""The site page per path (?vantage=) and the grid: access, what each shows, bad input."""

import datetime
import json

import pytest
from django.utils import timezone

from tests import factories

pytestmark = pytest.mark.django_db

NOW = timezone.now()


def _done(site, vantage, minutes_ago=60, mode="quick", bps=100e6, **extra):
    result = factories.sample_result_event(
        mode=mode, quick_bps=bps, cumulative_bps=bps, full_bps=bps if mode != "quick" else None
    )
    return factories.make_done_measurement(
        site=site,
        vantage=vantage,
        mode=mode,
        result=result,
        created_at=NOW - datetime.timedelta(minutes=minutes_ago),
        **extra,
    )


def _json_script(html, element_id):
    return json.loads(html.split(f'<script id="{element_id}" type="application/json">')[1].split("</script>")[0])


def _login(client, who, user, other_user):
    if who == "owner":
        client.force_login(user)
    elif who == "other":
        client.force_login(other_user)


@pytest.fixture
def two_paths(site, vantage, make_vantage):
    far = make_vantage(name="far")
    near_rows = [_done(site, vantage, minutes_ago=i, bps=100e6 + i) for i in range(1, 4)]
    far_rows = [_done(site, far, minutes_ago=10, mode="full", bps=5e9)]
    return near_rows, far_rows


@pytest.mark.parametrize("who", ["anonymous", "owner", "other"])
def test_site_page_lists_paths_for_everyone(client, user, other_user, site, two_paths, who):
    _login(client, who, user, other_user)
    response = client.get("/sites/loopback/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<a href="?vantage=far">far → Loopback iperf3</a>' in html
    assert '<a href="?vantage=local">local → Loopback iperf3</a>' in html
    assert "choose one for its history and analyses" in html
    assert 'id="history-data"' not in html  # two paths: none is picked for the reader
    assert html.count("permalink</a>") == 4


@pytest.mark.parametrize("who", ["anonymous", "owner", "other"])
def test_path_page_shows_only_that_path(client, user, other_user, site, two_paths, who):
    _login(client, who, user, other_user)
    near_rows, far_rows = two_paths
    html = client.get("/sites/loopback/?vantage=local").content.decode()
    assert "Path local → Loopback iperf3" in html
    assert "3 measurements: 3 done, 0 failed" in html
    chart = _json_script(html, "history-data")
    assert [p["slug"] for p in chart["quick"]] == [m.slug for m in reversed(near_rows)]
    assert chart["full"] == [] and chart["validate"] == []
    assert far_rows[0].slug not in html
    assert html.count("permalink</a>") == 3
    assert '<tr class="selected">' in html


def test_single_path_site_shows_its_path(client, site, vantage):
    _done(site, vantage)
    html = client.get("/sites/loopback/").content.decode()
    assert "Path local → Loopback iperf3" in html and 'id="history-data"' in html


def test_path_page_unknown_vantage_404(client, site, vantage, make_vantage):
    make_vantage(name="never-tested")
    _done(site, vantage)
    assert client.get("/sites/loopback/?vantage=nope").status_code == 404
    assert client.get("/sites/loopback/?vantage=never-tested").status_code == 404


def test_path_page_bad_mode_400_names_allowed(client, site, vantage):
    _done(site, vantage)
    response = client.get("/sites/loopback/?vantage=local&mode=fast")
    assert response.status_code == 400
    assert response.content.decode() == "mode='fast' is not a mode: use quick, full or validate, or leave mode out."


def test_path_page_mode_defaults_to_most_tested_and_keeps_modes_apart(client, site, vantage):
    for i in range(3):
        _done(site, vantage, minutes_ago=i, mode="full", bps=900e6, streams=4, window_bytes=1 << 20)
    _done(site, vantage, mode="quick", bps=100e6, streams=1, window_bytes=65536)
    html = client.get("/sites/loopback/?vantage=local").content.decode()
    assert 'mode=full#modes" class="current">full (3)</a>' in html
    assert _json_script(html, "window-data") == [
        {"congestion": "default", "lines": [{"streams": 4, "points": [{"x": 1 << 20, "y": 900e6, "n": 3}]}]}
    ]
    quick = client.get("/sites/loopback/?vantage=local&mode=quick").content.decode()
    # One quick run: too few for the window chart (issue 27), still the profile's one setting.
    assert _json_script(quick, "window-data")[0]["lines"] == []
    assert "too few runs<br>" in quick and "too few runs for an optimum: no setting has 3 runs yet;" in quick
    assert _json_script(quick, "profile-data")["settings"][0]["label"] == "P1 w64K default"


def test_path_page_heat_map_marks_optimum_and_window_limited(client, site, vantage):
    for i in range(3):  # paths.MIN_RUNS a cell
        _done(site, vantage, minutes_ago=60 + i, bps=500e6, streams=1, window_bytes=1 << 20, window_limited=True)
        _done(site, vantage, minutes_ago=60 + i, bps=540e6, streams=4, window_bytes=1 << 20)
    html = client.get("/sites/loopback/?vantage=local").content.decode()
    assert "optimum\n  <strong>1 stream, window 1.00 MiB</strong>" in html
    assert "(median 500.0 Mbit/s over n = 3 runs, the cheapest setting within 10 % of the best" in html
    assert html.count("★") == 2  # the optimum's cell and the legend
    assert 'class="num optimum limited"' in html


def test_path_page_query_count_does_not_grow_with_rows(client, site, vantage, django_assert_num_queries):
    _done(site, vantage)
    client.get("/sites/loopback/?vantage=local")
    for i in range(40):
        _done(site, vantage, minutes_ago=i, streams=1 + i % 4, mode=("quick", "validate")[i % 2])
    with django_assert_num_queries(13):
        client.get("/sites/loopback/?vantage=local")
    with django_assert_num_queries(2):  # cached under the site's version: the site and the alert flags
        client.get("/sites/loopback/?vantage=local")


def test_path_page_paginates_keeping_vantage(client, site, vantage):
    for i in range(30):
        _done(site, vantage, minutes_ago=i)
    html = client.get("/sites/loopback/?vantage=local").content.decode()
    assert '<a href="?vantage=local&amp;page=2">older →</a>' in html
    assert client.get("/sites/loopback/?vantage=local&page=2").content.decode().count("permalink</a>") == 5


def test_site_page_unknown_slug_404(client, db):
    assert client.get("/sites/nope/?vantage=local").status_code == 404


@pytest.mark.parametrize("who", ["anonymous", "owner", "other"])
def test_grid_readable_by_everyone(client, user, other_user, site, two_paths, who):
    _login(client, who, user, other_user)
    response = client.get("/grid/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<a href="/sites/loopback/?vantage=far">5.00 Gbit/s</a>' in html.replace("\n        ", "").replace(
        "\n      ", ""
    )
    assert html.count('<td class="cell new"') == 2


def test_grid_flags_path_in_alert(client, site, vantage):
    from portal.alerts.models import Alert, AlertRule

    _done(site, vantage)
    Alert.objects.create(
        rule=AlertRule.objects.create(name="drop"),
        site=site,
        vantage=vantage,
        series="any",
        mode="quick",
        baseline_bps=1,
        threshold_bps=1,
    )
    html = client.get("/grid/").content.decode()
    assert 'class="cell new alert"' in html and "in alert: drop" in html
    overview = client.get("/").content.decode()
    assert 'class="in-alert" title="in alert: drop">local ⚠</a>' in overview


def test_grid_post_not_allowed(client, db):
    assert client.post("/grid/").status_code == 405


def test_path_page_quick_vs_full_says_median_and_too_few(client, site, vantage):
    def validate(i, err):
        full = 100e6
        _done(
            site,
            vantage,
            minutes_ago=i,
            mode="validate",
            bps=full,
            validate_quick_bps=full * (1 + err / 100),
            validate_error_pct=err,
            validate_quick_converged=True,
        )

    validate(1, 2.0)
    html = " ".join(client.get("/sites/loopback/?vantage=local&mode=validate").content.decode().split())
    assert (
        "1 validate run (quick estimate and full run on one connection): too few runs for a median and p90 of "
        "|error| (they need 3)."
    ) in html
    assert "0.0 %" not in html.split('id="quick-vs-full">')[1].split("</p>")[0]
    validate(2, -4.0)
    validate(3, 6.0)
    html = " ".join(client.get("/sites/loopback/?vantage=local&mode=validate").content.decode().split())
    assert "3 validate runs (quick estimate and full run on one connection): median |error| 4.0 %, p90 |error| " in html
    assert "of what quick mode reports (n = 3)." in html
