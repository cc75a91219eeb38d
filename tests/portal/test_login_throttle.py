"""Login throttling through django-axes: a user name from one address is locked out after
LOGIN_FAILURE_LIMIT wrong passwords, with a 429 that says why and when to come back."""

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
    _fail(client, times=5, HTTP_X_REAL_IP="198.51.100.7")
    response = client.post(LOGIN, {"username": "alice", "password": "pw-for-tests-only"}, HTTP_X_REAL_IP=header_value)
    assert (response.status_code == 429) is expected_locked
