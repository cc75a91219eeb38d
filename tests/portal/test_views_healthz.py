from django.test import Client


def test_healthz_anonymous_returns_ok_plain_text(db):
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"] == "text/plain"


def test_healthz_post_not_allowed(db):
    assert Client().post("/healthz").status_code == 405
