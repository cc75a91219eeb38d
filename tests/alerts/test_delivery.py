"""Alert notices: the webhook POSTed to a real local HTTP server (retries, timeout), e-mail
through Django's mail backend."""

import pytest
from django.core import mail

from portal.alerts import delivery as delivery_mod
from portal.alerts.models import Alert, AlertRule, Delivery
from portal.alerts.tasks import deliver
from tests import factories
from tests.alerts.support import webhook_server

pytestmark = pytest.mark.django_db


@pytest.fixture
def alert(site, vantage):
    rule = AlertRule.objects.create(name="drop", threshold_pct=70.0)
    m1 = factories.make_done_measurement(site=site, vantage=vantage)
    m2 = factories.make_done_measurement(site=site, vantage=vantage)
    return Alert.objects.create(
        rule=rule,
        site=site,
        vantage=vantage,
        series="P1 wdefault default",
        mode="quick",
        baseline_bps=100e6,
        threshold_bps=70e6,
        opened_by=m2,
        opened_bps=[
            {"slug": m1.slug, "at": "2026-11-22T10:00:00+00:00", "bps": 40e6},
            {"slug": m2.slug, "at": "2026-11-22T10:10:00+00:00", "bps": 30e6},
        ],
    )


def test_webhook_delivered_as_json_post(alert, settings):
    settings.PORTAL_URL = "https://portal.example.org"
    with webhook_server() as hook:
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=hook.url)
        assert delivery_mod.attempt(d.pk) == "sent"
        [got] = hook.wait_for(1, 5)
    assert got["content_type"] == "application/json"
    body = got["json"]
    assert body["event"] == "alert.opened" and body["alert_id"] == alert.pk
    assert (body["site"], body["vantage"], body["mode"], body["series"]) == (
        "loopback",
        "local",
        "quick",
        "P1 wdefault default",
    )
    assert (body["baseline_bps"], body["threshold_bps"], body["threshold_pct"]) == (100e6, 70e6, 70.0)
    assert [r["bps"] for r in body["results"]] == [40e6, 30e6]
    assert body["results"][1]["permalink"] == f"https://portal.example.org/m/{alert.opened_by.slug}/"
    assert body["path_url"] == "https://portal.example.org/sites/loopback/?vantage=local"
    assert body["closed_at"] is None
    d.refresh_from_db()
    assert (d.status, d.attempts, d.last_error) == ("sent", 1, "") and d.sent_at is not None


def test_webhook_retried_until_it_answers(alert, settings):
    settings.ALERT_DELIVERY_RETRIES = 3
    with webhook_server(fail_first=2, status=503) as hook:
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=hook.url)
        deliver.apply(args=[d.pk])  # eager: the retries run at once
        hook.wait_for(1, 5)
        assert hook.requests == 3
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("sent", 3)


def test_webhook_gives_up_after_retries(alert, settings):
    settings.ALERT_DELIVERY_RETRIES = 2
    with webhook_server(fail_first=100, status=500) as hook:
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=hook.url)
        deliver.apply(args=[d.pk])
        assert hook.requests == 3
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("failed", 3)
    assert d.last_error == f"webhook {hook.url} answered HTTP 500"


def test_webhook_timeout_is_a_failed_attempt(alert, settings):
    settings.ALERT_WEBHOOK_TIMEOUT_S = 0.3
    with webhook_server(stall_s=2.0) as hook:
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=hook.url)
        assert delivery_mod.attempt(d.pk) == "retry"
    d.refresh_from_db()
    assert d.status == "pending" and d.attempts == 1 and "timed out" in d.last_error


def test_webhook_refused_is_a_failed_attempt(alert):
    from tests.servers import free_port

    d = Delivery.objects.create(
        alert=alert, kind="opened", channel="webhook", target=f"http://127.0.0.1:{free_port()}/hook"
    )
    assert delivery_mod.attempt(d.pk) == "retry"
    d.refresh_from_db()
    assert "Connection refused" in d.last_error


def test_email_alert_and_recovery(alert, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "alerts@example.org"
    d = Delivery.objects.create(alert=alert, kind="opened", channel="email", target="noc@example.org")
    assert delivery_mod.attempt(d.pk) == "sent"
    [message] = mail.outbox
    assert message.to == ["noc@example.org"] and message.from_email == "alerts@example.org"
    assert message.subject == "[quickprobe] local -> Loopback iperf3: throughput below 70 %"
    assert "were below 70.0 Mbit/s, 70 % of the path's baseline 100.0 Mbit/s: 40.0 Mbit/s, 30.0 Mbit/s." in message.body
    alert.closed_bps = [{"slug": alert.opened_by.slug, "at": "2026-11-22T11:00:00+00:00", "bps": 95e6}]
    alert.save()
    closed = Delivery.objects.create(alert=alert, kind="closed", channel="email", target="noc@example.org")
    assert delivery_mod.attempt(closed.pk) == "sent"
    assert mail.outbox[1].subject == "[quickprobe] recovered: local -> Loopback iperf3"
    assert "are back at or above 70.0 Mbit/s: 95.0 Mbit/s." in mail.outbox[1].body


def test_attempt_skips_delivery_already_sent(alert):
    d = Delivery.objects.create(
        alert=alert, kind="opened", channel="webhook", target="http://127.0.0.1:9/", status="sent"
    )
    assert delivery_mod.attempt(d.pk) == "gone"
