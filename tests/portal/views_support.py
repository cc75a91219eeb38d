"""Shared fixtures for the page view tests (imported by tests/portal/test_views_*.py)."""

import uuid

import pytest


@pytest.fixture(autouse=True)
def isolated_cache(settings):
    # Real Redis, but a key prefix of our own: progress and summary keys carry database ids,
    # and other test runs sharing this Redis reuse the same ids. (Never cache.clear(): on
    # Redis that would flush everyone's keys.)
    cache = dict(settings.CACHES["default"])
    cache["KEY_PREFIX"] = f"test-views-{uuid.uuid4().hex}"
    settings.CACHES = {"default": cache}


def assert_login_redirect(response, path):
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"
