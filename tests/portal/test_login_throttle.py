"""Login throttling through django-axes: a user name from one address is locked out after
LOGIN_FAILURE_LIMIT wrong passwords, with a 429 that says why and when to come back."""

import ipaddress
import os
import subprocess
import sys

import pytest

from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)

LOGIN = "/accounts/login/"


def _fail(client, username="alice", times=1, url=LOGIN, **extra):
    responses = [client.post(url, {"username": username, "password": "wrong"}, **extra) for _ in range(times)]
    return responses[-1]


def test_login_throttle_locks_out_at_the_limit_with_retry_after(client, user, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    for _ in range(4):
        assert _fail(client).status_code == 200
    locked = _fail(client)
    assert locked.status_code == 429
    assert locked["Retry-After"] == "900"
    body = locked.content.decode()
    assert "locked for logins from your address after 5 wrong passwords" in body
    assert "Try again in 15 minutes" in body


def test_login_throttle_refuses_the_right_password_while_locked(client, user):
    _fail(client, times=5)
    response = client.post(LOGIN, {"username": "alice", "password": "pw-for-tests-only"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_login_throttle_other_user_and_other_address_unaffected(client, user, other_user):
    _fail(client, times=5)
    assert client.post(LOGIN, {"username": "bob", "password": "pw-for-tests-only"}).status_code == 302
    client.logout()
    elsewhere = client.post(LOGIN, {"username": "alice", "password": "pw-for-tests-only"}, REMOTE_ADDR="192.0.2.9")
    assert elsewhere.status_code == 302


def test_login_throttle_success_resets_the_count(client, user):
    _fail(client, times=4)
    assert client.post(LOGIN, {"username": "alice", "password": "pw-for-tests-only"}).status_code == 302
    client.logout()
    assert _fail(client, times=4).status_code == 200


def test_login_throttle_covers_the_admin_login(client, user):
    user.is_staff = True
    user.save()
    locked = _fail(client, times=5, url="/admin/login/")
    assert locked.status_code == 429
    assert client.get("/admin/").status_code == 302


@pytest.mark.parametrize("header_value, expected_locked", [("198.51.100.7", True), ("", False)])
def test_login_throttle_client_ip_header_behind_a_proxy(client, user, settings, header_value, expected_locked):
    # Behind nginx every login comes from the proxy's address: the header it sets names the client.
    settings.CLIENT_IP_HEADER = "X-Real-IP"
    settings.TRUSTED_PROXIES = [ipaddress.ip_network("127.0.0.1/32")]  # the test client's REMOTE_ADDR
    _fail(client, times=5, HTTP_X_REAL_IP="198.51.100.7")
    response = client.post(LOGIN, {"username": "alice", "password": "pw-for-tests-only"}, HTTP_X_REAL_IP=header_value)
    assert (response.status_code == 429) is expected_locked


def test_login_throttle_client_ip_header_from_an_untrusted_peer_ignored(client, user, settings):
    """Finding 7: gunicorn reached directly, a new X-Real-IP per guess; the peer is not the proxy."""
    settings.CLIENT_IP_HEADER = "X-Real-IP"
    settings.TRUSTED_PROXIES = [ipaddress.ip_network("10.9.9.9/32")]
    codes = [
        client.post(LOGIN, {"username": "alice", "password": "wrong"}, HTTP_X_REAL_IP=f"198.51.100.{n}").status_code
        for n in range(1, 13)
    ]
    assert codes == [200] * 4 + [429] * 8
    right = client.post(LOGIN, {"username": "alice", "password": "pw-for-tests-only"}, HTTP_X_REAL_IP="203.0.113.5")
    assert right.status_code == 429 and "_auth_user_id" not in client.session


@pytest.mark.parametrize("value", ["", "not-an-address", "198.51.100.7:99"])
def test_login_throttle_client_ip_header_garbage_from_the_proxy_counts_the_proxy(rf, settings, value):
    from portal.lockout import client_ip

    settings.CLIENT_IP_HEADER = "X-Real-IP"
    settings.TRUSTED_PROXIES = [ipaddress.ip_network("127.0.0.0/8")]
    assert client_ip(rf.post(LOGIN, HTTP_X_REAL_IP=value, REMOTE_ADDR="127.0.0.2")) == "127.0.0.2"
    assert client_ip(rf.post(LOGIN, HTTP_X_REAL_IP="2001:db8::7", REMOTE_ADDR="127.0.0.2")) == "2001:db8::7"


def _import_settings(**env):
    env = {
        "PATH": os.environ["PATH"],
        "SECRET_KEY": "insecure-test-only-key-for-make-test-and-benchmarks-0123456789",
        "PORTAL_VAR_DIR": os.environ.get("PORTAL_VAR_DIR", "/tmp"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", "import portal.settings as s; print(s.TRUSTED_PROXIES)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        timeout=60,
    )


def test_client_ip_header_without_trusted_proxies_warns_at_start():
    result = _import_settings(CLIENT_IP_HEADER="X-Real-IP")
    assert result.returncode == 0, result.stderr
    assert (
        "CLIENT_IP_HEADER=X-Real-IP is set without TRUSTED_PROXIES: the header is ignored and logins are "
        "counted by the peer's address (REMOTE_ADDR)."
    ) in result.stderr
    assert result.stdout.strip() == "[]"


def test_client_ip_header_with_trusted_proxies_starts_quietly():
    result = _import_settings(CLIENT_IP_HEADER="X-Real-IP", TRUSTED_PROXIES="127.0.0.1, 10.0.0.0/8")
    assert result.returncode == 0 and "TRUSTED_PROXIES" not in result.stderr, result.stderr
    assert result.stdout.strip() == "[IPv4Network('127.0.0.1/32'), IPv4Network('10.0.0.0/8')]"


def test_trusted_proxies_not_an_address_stops_the_start():
    result = _import_settings(TRUSTED_PROXIES="127.0.0.1,nginx")
    assert result.returncode == 1
    assert "TRUSTED_PROXIES: 'nginx' is not an address or network: expected e.g. 127.0.0.1,10.0.0.0/8" in result.stderr
