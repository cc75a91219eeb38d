"""The admin under the portal's Content-Security-Policy: staff pages must work without inline
scripts too (Django's admin keeps its JavaScript in static files)."""

import pytest

from tests import factories

pytestmark = pytest.mark.browser

PASSWORD = "browser-admin-pw-1"


def test_admin_pages_clean_under_csp(watched_page, live_server):
    page = watched_page.page
    base = live_server.url
    factories.make_user("root", password=PASSWORD, is_staff=True, is_superuser=True)
    site = factories.make_site(name="Loopback iperf3", slug="loopback")
    m = factories.make_done_measurement(site=site, vantage=factories.make_vantage(name="local"))

    page.goto(f"{base}/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.locator("input[type=submit], button[type=submit]").last.click()
    page.wait_for_url(f"{base}/admin/")
    for path in (
        "/admin/",
        "/admin/measure/site/",
        f"/admin/measure/site/{site.pk}/change/",
        "/admin/measure/measurement/",
        f"/admin/measure/measurement/{m.pk}/change/",
        "/admin/measure/vantage/add/",
    ):
        response = page.goto(f"{base}{path}")
        assert response.status == 200, path
    watched_page.screenshot("admin-measurement")
    watched_page.assert_clean()
