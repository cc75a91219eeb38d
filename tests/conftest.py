import os

import pytest

from tests import factories, servers

# Engineers and CI runs share one Redis: progress keys hold database ids, which repeat across
# test databases, so each test session gets its own cache namespace.
CACHE_KEY_PREFIX = f"test-{os.getpid()}"


@pytest.fixture(autouse=True)
def _private_cache_namespace(settings):
    caches = {name: dict(config) for name, config in settings.CACHES.items()}
    for config in caches.values():
        config["KEY_PREFIX"] = CACHE_KEY_PREFIX
    settings.CACHES = caches


@pytest.fixture
def user(db):
    return factories.make_user("alice")


@pytest.fixture
def other_user(db):
    return factories.make_user("bob")


@pytest.fixture
def site(db):
    return factories.make_site(name="Loopback iperf3", slug="loopback")


@pytest.fixture
def vantage(db):
    return factories.make_vantage(name="local")


@pytest.fixture
def measurement(db, site, vantage, user):
    return factories.make_measurement(site=site, vantage=vantage, requested_by=user)


@pytest.fixture
def done_measurement(db, site, vantage, user):
    return factories.make_done_measurement(site=site, vantage=vantage, requested_by=user)


@pytest.fixture
def make_site(db):
    return factories.make_site


@pytest.fixture
def make_vantage(db):
    return factories.make_vantage


@pytest.fixture
def make_measurement(db):
    return factories.make_measurement


@pytest.fixture
def make_done_measurement(db):
    return factories.make_done_measurement


@pytest.fixture
def api_token(user):
    from portal.measure.models import ApiToken

    return ApiToken.issue(user)


@pytest.fixture
def api_client(client, api_token):
    """A Django test client that sends a valid bearer token for `user`."""
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {api_token}"
    return client


@pytest.fixture
def iperf3_port():
    """A stock `iperf3 -s` on a free loopback port."""
    with servers.iperf_server("iperf3") as port:
        yield port


@pytest.fixture
def iperf2_port():
    """A stock `iperf -s` (iperf 2) on a free loopback port."""
    with servers.iperf_server("iperf2") as port:
        yield port


@pytest.fixture
def quickprobe_bin(settings):
    import os

    if not os.access(settings.QUICKPROBE_BIN, os.X_OK):
        pytest.fail(f"{settings.QUICKPROBE_BIN} is missing: build the prober first (`make prober`; `make test` does)")
    return settings.QUICKPROBE_BIN
