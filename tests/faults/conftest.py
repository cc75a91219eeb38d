import kombu.pools
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
    settings.CACHES = {
        "default": {
            "BACKEND": "portal.cache.ResilientRedisCache",
            "LOCATION": redis_server.url,
            "KEY_PREFIX": cache_key_prefix,
        }
    }
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


@pytest.fixture
def broker(redis_server):
    """This process's Celery app publishes to the test's own Redis (the web side of a drill)."""
    from tests.faults.cluster import celery_app

    app = celery_app()
    # The Django namespace's key is the one Celery reads (app.conf.broker_url would not stick).
    saved = app.conf.CELERY_BROKER_URL

    def forget_connections():
        if app._pool is not None:
            app._pool.force_close_all()
            app._pool = None
        app.amqp._producer_pool = None
        # kombu keeps producer pools in a registry of its own, keyed by broker URL: without a
        # reset, later tests in this process get the closed pool back ("Acquire on closed pool").
        kombu.pools.reset()

    forget_connections()
    app.conf.CELERY_BROKER_URL = redis_server.url
    try:
        yield app
    finally:
        forget_connections()
        app.conf.CELERY_BROKER_URL = saved
