import itertools
import os

import pytest

from tests import factories, servers

# Engineers and CI runs share one Redis, and the database is emptied after every test while
# the cache is not: progress keys hold database ids that repeat, and pages cache anonymous
# copies by URL. So each test gets a cache namespace of its own (never cache.clear(): that
# would flush the shared Redis).
CACHE_KEY_PREFIX = f"test-{os.getpid()}"
# The workers and servers tests start run measurements against iperf servers on loopback, and
# the worker judges the site's address when a test starts (portal/measure/hosts.py): they
# inherit this, as the in-process settings get it from allow_loopback_sites below.
os.environ.setdefault("ALLOW_PRIVATE_SITE_HOSTS", "1")
_cache_namespaces = itertools.count(1)


@pytest.fixture(autouse=True)
def cache_key_prefix(settings):
    """This test's cache KEY_PREFIX; a worker process a test starts must get it as the
    CACHE_KEY_PREFIX environment variable to share the test's progress and cache."""
    prefix = f"{CACHE_KEY_PREFIX}-{next(_cache_namespaces)}"
    caches = {name: dict(config) for name, config in settings.CACHES.items()}
    for config in caches.values():
        config["KEY_PREFIX"] = prefix
    settings.CACHES = caches
    return prefix


@pytest.fixture(autouse=True)
def allow_loopback_sites(settings):
    """The tests' iperf servers listen on loopback, which real deployments refuse as a site
    host (portal/measure/hosts.py); tests of that refusal set it back to False."""
    settings.ALLOW_PRIVATE_SITE_HOSTS = True


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Passwords hashed with MD5 inside the tests: the production hasher (PBKDF2, a million
    rounds, 0.23 s a hash on this machine) is slow on purpose, and a user made or logged in
    costs a hash. PBKDF2 stays on the list so that a password a subprocess (make run, a
    manage.py command) hashed under the default settings still checks here; no test checks
    the hasher itself (Django's own tests do)."""
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        *settings.PASSWORD_HASHERS,
    ]


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
