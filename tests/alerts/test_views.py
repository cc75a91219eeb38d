"""The alerts page: readable by anyone (like the site pages), open and closed apart."""

import pytest
from django.utils import timezone

from portal.alerts.models import Alert, AlertRule, Delivery
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def alerts(site, vantage):
    rule = AlertRule.objects.create(name="drop 70", threshold_pct=70.0)
    m = factories.make_done_measurement(site=site, vantage=vantage)
    points = [{"slug": m.slug, "at": "2026-11-22T10:00:00+00:00", "bps": 40e6}]
    open_alert = Alert.objects.create(
        rule=rule,
        site=site,
        vantage=vantage,
        series="any",
        mode="quick",
        baseline_bps=100e6,
        threshold_bps=70e6,
        opened_bps=points,
    )
    Delivery.objects.create(alert=open_alert, kind="opened", channel="webhook", target="http://x/", status="sent")
    closed = Alert.objects.create(
        rule=rule,
        site=site,
        vantage=vantage,
        series="P4 w1M cubic",
        mode="quick",
        baseline_bps=200e6,
        threshold_bps=140e6,
        opened_bps=points,
        closed_at=timezone.now(),
        closed_bps=points,
    )
    return open_alert, closed


@pytest.mark.parametrize("who", ["anonymous", "owner", "other"])
def test_alert_list_readable_by_everyone(client, user, other_user, alerts, who):
    if who != "anonymous":
        client.force_login(user if who == "owner" else other_user)
    response = client.get("/alerts/")
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count('class="alert-open"') == 1 and body.count('class="alert-closed"') == 1
    assert "/sites/loopback/?vantage=local" in body
    assert "alert webhook: sent" in body
    assert "P4 w1M cubic" in body


def test_alert_list_empty(client, db):
    body = client.get("/alerts/").content.decode()
    assert "No path is in alert." in body and "No alert has closed yet." in body


def test_alert_list_post_not_allowed(client, db):
    assert client.post("/alerts/").status_code == 405


def test_alert_list_pages_closed(client, site, vantage, settings):
    from portal.alerts import views

    rule = AlertRule.objects.create(name="r")
    for i in range(views.CLOSED_PAGE_SIZE + 1):
        Alert.objects.create(
            rule=rule,
            site=site,
            vantage=vantage,
            series=f"s{i}",
            mode="quick",
            baseline_bps=1,
            threshold_bps=1,
            closed_at=timezone.now(),
        )
    first = client.get("/alerts/").content.decode()
    assert first.count('class="alert-closed"') == views.CLOSED_PAGE_SIZE and "older →" in first
    second = client.get("/alerts/?page=2").content.decode()
    assert second.count('class="alert-closed"') == 1 and "older →" not in second


def test_alert_admin_rates_in_units(client, alerts):
    client.force_login(factories.make_user("root", is_staff=True, is_superuser=True))
    changelist = client.get("/admin/alerts/alert/").content.decode()
    assert '<td class="field-baseline">100.0 Mbit/s</td>' in changelist and "100000000.0" not in changelist
    view = " ".join(client.get(f"/admin/alerts/alert/{alerts[0].pk}/change/").content.decode().split())
    assert '<div class="readonly">100.0 Mbit/s</div>' in view and '<div class="readonly">70.0 Mbit/s</div>' in view
    assert 'name="baseline_bps"' not in view  # still not editable by hand
