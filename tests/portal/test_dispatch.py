import json
import os
import secrets

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError

from portal import settings as settings_module
from portal.measure import dispatch
from portal.measure.models import Measurement, Vantage
from portal.measure.vantages import CONGESTION_CONTROLS_PATH, register_vantage
from tests import factories


def test_request_measurement_enqueues_on_vantage_queue_after_commit(
    db, user, site, django_capture_on_commit_callbacks, settings
):
    import redis

    name = f"svc-{secrets.token_hex(4)}"
    factories.make_vantage(name=name)
    queue = f"vantage.{name}"
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            m = dispatch.request_measurement(
                {"site": site.slug, "vantage": name, "mode": "full", "duration_s": "3"}, user
            )
            assert client.llen(queue) == 0  # nothing is sent before the row is committed
        assert (m.status, m.mode, m.duration_s, m.requested_by) == ("queued", "full", 3, user)
        assert len(callbacks) == 1
        callbacks[0]()
        assert client.llen(queue) == 1
        message = json.loads(client.lpop(queue))
        assert message["headers"]["task"] == "measure.run"
        assert message["headers"]["argsrepr"] == f"[{m.pk}]"
    finally:
        client.delete(queue)


def test_request_measurement_invalid_raises_with_messages(db, user, site, vantage):
    with pytest.raises(ValidationError) as info:
        dispatch.request_measurement({"site": site.slug, "streams": "0"}, user)
    assert info.value.message_dict == {"streams": ["streams 0 is out of range: allowed 1 to 16 streams."]}
    assert Measurement.objects.count() == 0


def test_register_vantage_reads_this_host(db):
    with open(CONGESTION_CONTROLS_PATH) as f:
        controls = f.read().split()
    assert os.geteuid() == 0  # the tests run as root (CI, this machine): every available one is settable
    vantage = register_vantage("here")
    assert vantage.kernel == os.uname().release
    assert vantage.congestion_controls == controls and "reno" in controls
    assert vantage.last_seen is not None and vantage.enabled


def test_register_vantage_keeps_admin_choices(db):
    factories.make_vantage(
        name="here", description="Rack 4, 10G uplink", enabled=False, kernel="old", congestion_controls=[]
    )
    vantage = register_vantage("here", "default text")
    assert (vantage.description, vantage.enabled, vantage.kernel) == ("Rack 4, 10G uplink", False, os.uname().release)
    assert Vantage.objects.get(name="here").congestion_controls == vantage.congestion_controls != []


def test_celery_routes_and_beat_schedule():
    from portal.celery import app

    assert app.conf.beat_schedule["reap-lost-measurements"]["task"] == "measure.reap"
    assert app.conf.task_routes["measure.reap"] == {"queue": "celery"}
    app.loader.import_default_modules()  # what a worker does at start: autodiscovers the apps' tasks
    assert {"measure.run", "measure.reap", "measure.register_vantage"} <= set(app.tasks)


@pytest.mark.parametrize("value,expected", [("1", True), ("yes", True), ("off", False), ("FALSE", False)])
def test_settings_env_bool_values(monkeypatch, value, expected):
    monkeypatch.setenv("X_FLAG", value)
    assert settings_module.env_bool("X_FLAG") is expected


def test_settings_bad_values_fail_loudly(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match=r"X_FLAG='maybe': expected one of 1/0, true/false, yes/no, on/off"):
        settings_module.env_bool("X_FLAG")
    monkeypatch.setenv("X_NUM", "ten")
    with pytest.raises(ImproperlyConfigured, match=r"X_NUM='ten': expected a float"):
        settings_module.env_number("X_NUM", 1.0, kind=float)
    monkeypatch.setenv("X_NUM", "0.5")
    with pytest.raises(ImproperlyConfigured, match=r"X_NUM='0.5': must be at least 1"):
        settings_module.env_number("X_NUM", 1.0, kind=float, minimum=1)
    with pytest.raises(ImproperlyConfigured, match="unsupported scheme 'mysql'"):
        settings_module.database_from_url("mysql://u@h/db")
    with pytest.raises(ImproperlyConfigured, match="names no database"):
        settings_module.database_from_url("postgres://u@h:5432/")


def test_settings_database_url_parsed():
    db = settings_module.database_from_url("postgres://alice:p%40ss@db.example:6543/portal?sslmode=require")
    assert (db["ENGINE"], db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["OPTIONS"]) == (
        "django.db.backends.postgresql",
        "portal",
        "alice",
        "p@ss",
        "db.example",
        "6543",
        {"sslmode": "require"},
    )
    assert settings_module.database_from_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"


def test_admin_measurement_list_never_reads_traces(admin_client, done_measurement):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get("/admin/measure/measurement/")
    assert response.status_code == 200
    assert done_measurement.slug in response.content.decode()
    assert not any("measurementtrace" in q["sql"] for q in queries.captured_queries)
    assert not any('"measure_measurement"."result"' in q["sql"] for q in queries.captured_queries)


@pytest.mark.parametrize("path", ["/admin/measure/site/", "/admin/measure/vantage/", "/admin/measure/apitoken/"])
def test_admin_lists_load(admin_client, done_measurement, path):
    assert admin_client.get(path).status_code == 200


def test_admin_requires_staff(client, user):
    client.force_login(user)
    response = client.get("/admin/measure/measurement/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_demo_setup_command_creates_site_vantage_login_token(db, capsys, settings):
    from django.contrib.auth import authenticate
    from django.core.management import call_command
    from django.test import RequestFactory

    from portal.measure.models import ApiToken, Site

    settings.VANTAGE_NAME = "demo-host"
    call_command("demo_setup", "--iperf-port", "5999", "--password", "s3cret-demo-pw")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "site local-iperf3: iperf3 on 127.0.0.1:5999; vantage demo-host"
    assert out[1] == "login: demo / s3cret-demo-pw"
    token = out[2].removeprefix("token: ")
    # django-axes' backend needs the request (it throttles by the client's address).
    login = RequestFactory().post("/accounts/login/")
    assert authenticate(request=login, username="demo", password="s3cret-demo-pw") is not None
    assert ApiToken.objects.get(key_hash=ApiToken.hash_key(token)).user.username == "demo"
    site = Site.objects.get(slug="local-iperf3")
    assert (site.host, site.port, site.protocol, site.enabled) == ("127.0.0.1", 5999, "iperf3", True)
    assert Vantage.objects.filter(name="demo-host").exists()
    # Run again (make run does at each start): the same rows, updated.
    call_command("demo_setup", "--iperf-port", "6001")
    assert Site.objects.filter(slug="local-iperf3").count() == 1
    assert Site.objects.get(slug="local-iperf3").port == 6001


def test_admin_cancel_action_fails_unfinished_only(admin_client, admin_user, site, vantage):
    queued = factories.make_measurement(site=site, vantage=vantage)
    running = factories.make_measurement(site=factories.make_site(), vantage=vantage, status="running")
    done = factories.make_done_measurement(site=site, vantage=vantage)
    response = admin_client.post(
        "/admin/measure/measurement/", {"action": "cancel", "_selected_action": [queued.pk, running.pk, done.pk]}
    )
    assert response.status_code == 302
    for m in (queued, running, done):
        m.refresh_from_db()
    assert [(m.status, m.failure_code) for m in (queued, running, done)] == [
        ("failed", "cancelled"),
        ("failed", "cancelled"),
        ("done", ""),
    ]
    assert queued.failure_reason == f"cancelled by {admin_user.username}"


def test_congestion_controls_unprivileged_limited_to_allowed(monkeypatch):
    from portal.measure import vantages

    with open(vantages.CONGESTION_CONTROLS_PATH) as f:
        available = f.read().split()
    with open(vantages.ALLOWED_CONGESTION_CONTROLS_PATH) as f:
        allowed = set(f.read().split())
    monkeypatch.setattr(vantages, "_has_net_admin", lambda: False)
    assert vantages.available_congestion_controls() == [c for c in available if c in allowed]
    monkeypatch.setattr(vantages, "_has_net_admin", lambda: True)
    assert vantages.available_congestion_controls() == available


def test_has_net_admin_as_root():
    from portal.measure import vantages

    assert vantages._has_net_admin() is True  # root in CI and here
