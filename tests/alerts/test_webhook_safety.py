"""Webhook URLs are requests the portal makes from inside the deployment (issue 28, findings
2, 3 and 6): http(s) only, the site-host address policy at save time and at every delivery,
no redirects, every failure retried then failed with a reason, and the URL's secrets never
shown. Receivers are real servers on 127.0.0.1; refusals are asserted before any connect."""

import base64
import socket

import pytest
from django.contrib.auth.models import Permission

from portal.alerts import delivery as delivery_mod
from portal.alerts import webhooks
from portal.alerts.models import AlertRule, Delivery
from portal.alerts.tasks import deliver
from portal.measure import hosts
from tests import factories
from tests.alerts.support import raw_server, webhook_server
from tests.alerts.test_delivery import alert  # noqa: F401 (fixture)
from tests.portal.test_runner_hosts import PUBLIC, fake_getaddrinfo

pytestmark = pytest.mark.django_db


@pytest.fixture
def strict(settings):
    settings.ALLOW_PRIVATE_SITE_HOSTS = False
    return settings


def _rule_form(admin_client, url):
    return admin_client.post(
        "/admin/alerts/alertrule/add/",
        {
            "name": "hooked",
            "enabled": "on",
            "mode": "quick",
            "same_settings": "on",
            "baseline_results": "10",
            "baseline_days": "14",
            "consecutive": "3",
            "threshold_pct": "70",
            "email_to": "",
            "webhook_url": url,
        },
    )


@pytest.mark.parametrize(
    "url, message",
    [
        ("http://169.254.169.254/latest/", "resolves to 169.254.169.254, a cloud metadata address"),
        ("http://10.0.0.1/hook", "resolves to 10.0.0.1, a private address"),
        ("http://127.0.0.1:6379/", "resolves to 127.0.0.1, a loopback address"),
        ("http://[::1]:5432/", "resolves to ::1, a loopback address"),
        ("http://localhost/hook", "'localhost' resolves to 127.0.0.1, a loopback address"),
        ("https://[64:ff9b::a9fe:a9fe]/", "an IPv6 form of 169.254.169.254, a cloud metadata address"),
        ("ftp://127.0.0.1/x", "the scheme is 'ftp': webhook URLs must be http:// or https://."),
    ],
)
def test_webhook_url_refused_at_save(admin_client, strict, url, message):
    """Finding 3: the admin accepted all of these."""
    response = _rule_form(admin_client, url)
    assert response.status_code == 200
    assert message in response.content.decode().replace("&#x27;", "'")
    assert not AlertRule.objects.exists()


def test_webhook_url_public_accepted_at_save(admin_client, strict, monkeypatch):
    monkeypatch.setattr(hosts, "getaddrinfo", fake_getaddrinfo({"hooks.example.net": [PUBLIC]}))
    response = _rule_form(admin_client, "https://hooks.example.net/services/T0/B0/s3cr3t")
    assert response.status_code == 302
    assert AlertRule.objects.get().webhook_url == "https://hooks.example.net/services/T0/B0/s3cr3t"


def test_webhook_name_resolving_to_loopback_at_delivery_refused_before_connect(alert, strict, monkeypatch):  # noqa: F811
    """Saved while `localhost` resolved public; at delivery it is 127.0.0.1: nothing is sent."""
    with webhook_server() as hook:
        url = f"http://localhost:{hook.url.rsplit(':', 1)[1]}"
        with monkeypatch.context() as patch:
            patch.setattr(hosts, "getaddrinfo", fake_getaddrinfo({"localhost": [PUBLIC]}))
            AlertRule(name="r", webhook_url=url).full_clean()
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=url)
        assert delivery_mod.attempt(d.pk) == "retry"
        assert hook.paths == []
    d.refresh_from_db()
    port = url.rsplit(":", 2)[-1].split("/")[0]
    assert d.last_error == (
        f"webhook http://localhost:{port}/hook: refused before connecting: "
        "'localhost' resolves to 127.0.0.1, a loopback address"
    )


def test_webhook_redirect_not_followed(alert, settings):  # noqa: F811
    """Finding 3: a 302 to an internal URL was followed (GET /internal)."""
    settings.ALERT_DELIVERY_RETRIES = 1
    with webhook_server(fail_first=100, status=302) as hook:
        hook.location = hook.url.replace("/hook", "/internal")
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=hook.url)
        deliver.apply(args=[d.pk])
        assert hook.paths == ["POST /hook", "POST /hook"]
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("failed", 2)
    assert d.last_error == f"webhook {hook.url} answered HTTP 302: redirects are not followed; give the final URL"


def test_webhook_garbled_reply_retried_then_failed(alert, settings):  # noqa: F811
    """Finding 6: `HTTX/9 what` raised BadStatusLine out of the task; the notice stayed pending."""
    settings.ALERT_DELIVERY_RETRIES = 2

    def garbled(conn, request):
        conn.sendall(b"HTTX/9 what\r\n\r\n")

    with raw_server(garbled) as server:
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=server.url)
        deliver.apply(args=[d.pk])
        assert len(server.requests) == 3 and server.requests[0] == "POST /hook HTTP/1.1"
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("failed", 3)
    assert d.last_error == f"webhook {server.url}: not an HTTP answer (BadStatusLine: HTTX/9 what)"


def test_webhook_closed_without_reply_retried_then_failed(alert, settings):  # noqa: F811
    settings.ALERT_DELIVERY_RETRIES = 1
    with raw_server(lambda conn, request: None) as server:
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=server.url)
        deliver.apply(args=[d.pk])
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("failed", 2)
    assert d.last_error.startswith(f"webhook {server.url}: not an HTTP answer (RemoteDisconnected")


def test_unexpected_error_in_delivery_retried_then_failed(alert, settings, monkeypatch):  # noqa: F811
    settings.ALERT_DELIVERY_RETRIES = 1

    def broken(delivery):
        raise KeyError("boom")

    monkeypatch.setattr(delivery_mod, "send_once", broken)
    d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target="http://127.0.0.1:9/")
    deliver.apply(args=[d.pk])
    d.refresh_from_db()
    assert (d.status, d.attempts, d.last_error) == ("failed", 2, "webhook delivery hit an unexpected error: KeyError")


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://hooks.example.net/fail?token=s3cr3t-1", "https://hooks.example.net/fail?..."),
        ("https://user:s3cr3t@hooks.example.net:8443/a", "https://hooks.example.net:8443/a"),
        ("https://hooks.example.net/services/T0/B0/s3cr3t", "https://hooks.example.net/services/..."),
        ("http://[2001:db8::1]:81/x#s3cr3t", "http://[2001:db8::1]:81/x"),
        ("https://hooks.example.net", "https://hooks.example.net/"),
        ("http://[bad", "(an unreadable URL)"),
    ],
)
def test_webhook_redact_keeps_no_secret(url, shown):
    assert webhooks.redact(url) == shown


def _failed_delivery_with_secret(alert, hook):  # noqa: F811
    url = f"{hook.url.replace('/hook', '/fail')}?token=s3cr3t-abc"
    d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=url)
    assert delivery_mod.attempt(d.pk) == "retry"
    d.refresh_from_db()
    return d


def test_webhook_secret_not_stored_in_last_error(alert):  # noqa: F811
    """Finding 2: last_error carried the URL with its ?token=."""
    with webhook_server(fail_first=1, status=500) as hook:
        d = _failed_delivery_with_secret(alert, hook)
    assert d.last_error == f"webhook {hook.url.replace('/hook', '/fail')}?... answered HTTP 500"
    assert "s3cr3t" not in str(d)


@pytest.mark.parametrize("who", ["anonymous", "user", "staff"])
def test_alert_list_shows_delivery_error_to_staff_only_and_never_the_secret(client, alert, user, who):  # noqa: F811
    with webhook_server(fail_first=1, status=500) as hook:
        d = _failed_delivery_with_secret(alert, hook)
    if who == "user":
        client.force_login(user)
    elif who == "staff":
        client.force_login(factories.make_user("staffer", is_staff=True))
    body = client.get("/alerts/").content.decode()
    assert "s3cr3t" not in body
    assert ("answered HTTP 500" in body) is (who == "staff")
    assert "alert webhook: pending" in body
    if who == "staff":
        assert f'title="{d.last_error}"' in body


def test_admin_shows_webhook_url_whole_only_to_who_may_change_it(client, alert, admin_client):  # noqa: F811
    rule = alert.rule
    rule.webhook_url = "http://127.0.0.1:9/services/T0/B0/s3cr3t?token=s3cr3t"
    rule.save()
    Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=rule.webhook_url)
    viewer = factories.make_user("viewer", is_staff=True)
    viewer.user_permissions.set(
        Permission.objects.filter(codename__in=["view_alertrule", "view_alert", "view_delivery"])
    )
    client.force_login(viewer)
    for url in (
        "/admin/alerts/alertrule/",
        f"/admin/alerts/alertrule/{rule.pk}/change/",
        f"/admin/alerts/alert/{alert.pk}/change/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert "s3cr3t" not in body, url
        assert "http://127.0.0.1:9/services/...?..." in body, url
    editor_form = admin_client.get(f"/admin/alerts/alertrule/{rule.pk}/change/").content.decode()
    assert 'value="http://127.0.0.1:9/services/T0/B0/s3cr3t?token=s3cr3t"' in editor_form


def test_webhook_credentials_sent_as_basic_auth(alert):  # noqa: F811
    with webhook_server() as hook:
        url = hook.url.replace("http://", "http://bot:pa%3Ass@")
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=url)
        assert delivery_mod.attempt(d.pk) == "sent"
    assert hook.headers[0]["Authorization"] == "Basic " + base64.b64encode(b"bot:pa:ss").decode()


def test_webhook_tried_at_the_next_address_when_the_first_refuses(alert, monkeypatch):  # noqa: F811
    with webhook_server() as hook:
        port = int(hook.url.rsplit(":", 1)[1].split("/")[0])
        monkeypatch.setattr(hosts, "getaddrinfo", fake_getaddrinfo({"dual.example.net": ["::1", "127.0.0.1"]}))
        url = f"http://dual.example.net:{port}/hook"
        d = Delivery.objects.create(alert=alert, kind="opened", channel="webhook", target=url)
        assert delivery_mod.attempt(d.pk) == "sent", Delivery.objects.get(pk=d.pk).last_error
        assert hook.headers[0]["Host"] == f"dual.example.net:{port}"
    assert socket.has_ipv6
