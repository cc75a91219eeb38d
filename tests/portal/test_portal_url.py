"""PORTAL_URL, the base of links printed outside a request, follows the port the portal serves
on unless it is set; a bad PORT stops the process at start."""

from tests.portal.test_deploy import _django

SHOW = "from django.conf import settings; print(settings.PORTAL_URL)"


def test_portal_url_default_follows_port():
    result = _django(SHOW, DEBUG="1", PORT="8765", PORTAL_URL="")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "http://127.0.0.1:8765"


def test_portal_url_default_without_port_is_8000():
    result = _django(SHOW, DEBUG="1", PORT="", PORTAL_URL="")
    assert result.stdout.strip() == "http://127.0.0.1:8000"


def test_portal_url_set_wins_over_port():
    result = _django(SHOW, DEBUG="1", PORT="8765", PORTAL_URL="https://portal.example.org")
    assert result.stdout.strip() == "https://portal.example.org"


def test_portal_url_bad_port_is_refused():
    result = _django(SHOW, DEBUG="1", PORT="http", PORTAL_URL="")
    assert result.returncode != 0
    assert "PORT='http': expected a int" in result.stderr
