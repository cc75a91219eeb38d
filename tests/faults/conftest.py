import pytest

from tests.faults.cluster import Cluster, RedisServer


@pytest.fixture
def redis_server(tmp_path):
    """A redis-server of this test's own on a spare port (AOF on); stopped at the end."""
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def dead_cache(settings, redis_server, cache_key_prefix):
    """The Django cache pointed at the test's own Redis, which is then stopped: an outage."""
    settings.CACHES = {"default": {"BACKEND": "portal.cache.ResilientRedisCache", "LOCATION": redis_server.url,
                                   "KEY_PREFIX": cache_key_prefix}}
    redis_server.stop()
    return redis_server


@pytest.fixture
def cluster(transactional_db, tmp_path, redis_server, cache_key_prefix, quickprobe_bin):
    """Starts workers / housekeeping / beat against the test's own Redis on demand."""
    started = Cluster(tmp_path, redis_server, cache_key_prefix)
    try:
        yield started
    finally:
        started.stop()
