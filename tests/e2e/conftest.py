"""Real Celery worker processes, each on a vantage queue of its own and started with make run's
command line (portal/launch.py), against Redis and pytest-django's test database, running the
real prober against a real iperf3 server."""

import os
import secrets
import signal
import subprocess

import pytest

from portal import launch
from tests import servers


def _database_url():
    from django.db import connection

    db = connection.settings_dict
    user = f"{db['USER']}@" if db["USER"] else ""
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{user}{db['HOST'] or '127.0.0.1'}{port}/{db['NAME']}"


class Worker:
    def __init__(self, proc, name, log):
        self.proc, self.name, self.log = proc, name, log

    def kill(self):
        """SIGKILL the worker and its pool children at once: a crashed host, no cleanup."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout=60):
        """SIGTERM to the main process only, as `docker compose stop` sends it: a warm shutdown
        that lets the running test finish and leaves the queued ones on the broker."""
        os.kill(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout)


@pytest.fixture
def start_worker(transactional_db, quickprobe_bin, cache_key_prefix):
    """Starts workers on demand, each for a vantage of its own; all are stopped at the end.
    Returns a function that starts one and returns its Worker once its vantage is registered."""
    from django.conf import settings as django_settings

    from portal.measure.models import Vantage

    if not django_settings.REDIS_URL:
        pytest.fail("the e2e tests need REDIS_URL (make test sets it)")
    started = []

    def start(extra_queues=(), extra_env=None, name=None, concurrency=None):
        name = name or f"e2e-{secrets.token_hex(4)}"
        env = dict(
            os.environ,
            DATABASE_URL=_database_url(),
            VANTAGE_NAME=name,
            CACHE_KEY_PREFIX=cache_key_prefix,
            HEARTBEAT_TEST_S="0.5",
            HEARTBEAT_VANTAGE_S="0.5",
            RETRY_BASE_S="0.5",
            RETRY_MAX_S="2",
            PYTHONUNBUFFERED="1",
            **(extra_env or {}),
        )
        servers.ARTIFACTS.mkdir(exist_ok=True)
        log = servers.ARTIFACTS / f"celery-{name}-{len(started)}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                launch.vantage_worker(name, extra_queues=extra_queues, concurrency=concurrency),
                cwd=servers.REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        started.append((proc, name, extra_queues))
        # Ready once it consumes ("ready." in its log) and its vantage is registered; a second
        # worker of one vantage finds the row already there.
        servers.wait_until(
            lambda: " ready." in log.read_text() and Vantage.objects.filter(name=name).exists(),
            60,
            "celery worker",
            proc,
            log,
        )
        return Worker(proc, name, log)

    try:
        yield start
    finally:
        import redis

        client = redis.Redis.from_url(django_settings.REDIS_URL)
        servers.stop_all([proc for proc, _, _ in started])
        for _, name, queues in started:
            client.delete(f"vantage.{name}", *queues)


@pytest.fixture
def celery_worker(start_worker):
    """One worker on a vantage of its own (one test at a time, the default)."""
    return start_worker()
