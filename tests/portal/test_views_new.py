import pytest
from django.test import Client

from portal.measure.models import Measurement
from tests.portal.views_support import assert_login_redirect, isolated_cache  # noqa: F401 (autouse fixture)


def test_new_form_anonymous_redirects_to_login(client, site, vantage):
    assert_login_redirect(client.get("/measure/new"), "/measure/new")


def test_new_form_post_anonymous_stores_nothing(client, site, vantage):
    response = client.post("/measure/new", {"site": site.slug, "vantage": vantage.name})
    assert_login_redirect(response, "/measure/new")
    assert Measurement.objects.count() == 0


@pytest.mark.parametrize("who", ["user", "other_user"])
def test_new_form_logged_in_shows_fields_with_ranges(request, who, site, vantage):
    c = Client()
    c.force_login(request.getfixturevalue(who))
    html = c.get("/measure/new").content.decode()
    for name in ("site", "vantage", "mode", "duration_s", "streams", "window", "congestion"):
        assert f'name="{name}"' in html
    assert '<div class="help" id="help-streams">Parallel TCP streams, 1-16 (default 1).</div>' in html
    assert '<div class="help" id="help-duration_s">1-60 s (default 10)' in html
    assert "(4K-16M)" in html
    assert '<label for="id_duration_s">Duration (-t)</label>' in html
    assert '<label for="id_window">Window (-w)</label>' in html


def test_new_form_preselects_site_from_query(client, user, site, vantage):
    client.force_login(user)
    html = client.get("/measure/new?site=loopback").content.decode()
    assert '<option value="loopback" selected>' in html


def test_new_form_ignores_unknown_preselect(client, user, site, vantage):
    client.force_login(user)
    html = client.get("/measure/new?site=nope").content.decode()
    assert '<option value="loopback">Loopback iperf3 (Loopback)</option>' in html
    assert '<option value="" selected>choose a site</option>' in html


def test_new_form_valid_post_redirects_to_live_page(client, user, site, vantage):
    client.force_login(user)
    response = client.post(
        "/measure/new",
        {
            "site": "loopback",
            "vantage": vantage.name,
            "mode": "full",
            "duration_s": "5",
            "streams": "4",
            "window": "256K",
            "congestion": "cubic",
        },
    )
    m = Measurement.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/m/{m.slug}/"
    assert (
        m.site,
        m.vantage,
        m.requested_by,
        m.mode,
        m.duration_s,
        m.streams,
        m.window_bytes,
        m.congestion,
        m.status,
    ) == (site, vantage, user, "full", 5, 4, 262144, "cubic", "queued")


def test_new_form_errors_shown_per_field_and_nothing_stored(client, user, site, vantage):
    client.force_login(user)
    response = client.post(
        "/measure/new",
        {
            "site": "loopback",
            "vantage": vantage.name,
            "mode": "quick",
            "duration_s": "0",
            "streams": "99",
            "window": "5X",
            "congestion": "vegas",
        },
    )
    assert response.status_code == 400  # issue 9: a refused form is a 4xx (it was 200 until then)
    html = response.content.decode()
    # The page names each knob as its label does (issue 27: it used the API's duration_s).
    assert (
        '<ul class="errors" id="errors-duration_s"><li>duration (-t) 0 is out of range: allowed 1 to 60 seconds.</li></ul>'
    ) in html
    assert (
        '<ul class="errors" id="errors-streams"><li>streams (-P) 99 is out of range: allowed 1 to 16 streams.</li></ul>'
    ) in html
    assert '<ul class="errors" id="errors-window"><li>window (-w) &#x27;5X&#x27; is not a size' in html
    assert (
        '<ul class="errors" id="errors-congestion"><li>congestion control (-C) &#x27;vegas&#x27; is not available on '
        "vantage local: choose one of reno, cubic, bbr"
    ) in html
    # ...and keeps its labels and help after the error.
    assert '<label for="id_duration_s">Duration (-t)</label>' in html
    assert '<label for="id_streams">Streams (-P)</label>' in html
    assert '<div class="help" id="help-site">Only registered, enabled sites can be tested.</div>' in html
    assert "duration_s" not in html.split('id="errors-duration_s">')[1].split("</ul>")[0]
    assert 'id="errors-site"' not in html
    # What the user typed survives the round trip.
    assert 'value="99"' in html
    assert Measurement.objects.count() == 0


def test_new_form_disabled_site_rejected(client, user, make_site, vantage):
    make_site(name="Retired", slug="retired", enabled=False)
    client.force_login(user)
    html = client.post("/measure/new", {"site": "retired", "vantage": vantage.name}).content.decode()
    assert (
        '<ul class="errors" id="errors-site"><li>site &#x27;retired&#x27; is disabled: an administrator has '
        "taken it out of service; choose another site.</li></ul>"
    ) in html
    assert Measurement.objects.count() == 0


def test_new_form_site_missing_worded_for_the_page(client, user, site, vantage):
    client.force_login(user)
    html = client.post("/measure/new", {"vantage": vantage.name}).content.decode()
    assert (
        '<ul class="errors" id="errors-site"><li>choose a site: only registered, enabled sites can be tested.</li></ul>'
    ) in html


def test_new_form_carries_a_permalinks_settings(client, user, site, vantage):
    client.force_login(user)
    query = "site=loopback&vantage=local&mode=full&duration_s=7&streams=4&window=262144&congestion=cubic"
    html = client.get(f"/measure/new?{query}").content.decode()
    assert '<option value="loopback" selected>' in html
    assert '<option value="local" selected>' in html
    assert '<option value="full" selected>' in html
    assert 'name="duration_s" value="7"' in html
    assert 'name="streams" value="4"' in html
    assert 'name="window" value="256K"' in html
    assert '<option value="cubic" selected>' in html


def test_new_form_leaves_refused_settings_at_their_defaults(client, user, site, vantage):
    client.force_login(user)
    html = client.get("/measure/new?site=loopback&streams=99&window=5X&mode=turbo&congestion=vegas").content.decode()
    assert '<option value="loopback" selected>' in html
    assert 'name="streams" value="1"' in html  # the default, not 99
    assert 'name="window" value=' not in html
    assert '<option value="quick" selected>' in html
    assert '<option value="" selected>vantage default</option>' in html
