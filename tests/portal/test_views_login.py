from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)


def test_login_page_renders_form_with_next(client, db):
    html = client.get("/accounts/login/?next=/measure/new").content.decode()
    assert '<input type="hidden" name="next" value="/measure/new">' in html
    assert 'name="username"' in html and 'name="password"' in html


def test_login_wrong_password_says_so_and_stays(client, user):
    response = client.post("/accounts/login/", {"username": "alice", "password": "wrong", "next": "/measure/new"})
    assert response.status_code == 200
    assert "Please enter a correct username and password." in response.content.decode()


def test_login_then_back_to_the_form(client, user, site, vantage):
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "pw-for-tests-only", "next": "/measure/new?site=loopback"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/measure/new?site=loopback"
    assert '<option value="loopback" selected>' in client.get(response["Location"]).content.decode()


def test_logout_is_a_post_form_in_the_header(client, user):
    client.force_login(user)
    html = client.get("/").content.decode()
    assert '<form method="post" action="/accounts/logout/" class="inline">' in html
    assert client.post("/accounts/logout/").status_code == 302
    assert "Log in</a>" in client.get("/").content.decode()
