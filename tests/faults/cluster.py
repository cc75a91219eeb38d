"""The real processes a fault drill starts for itself: a redis-server on a spare port (AOF on,
in the test's own directory), Celery workers, a housekeeping worker and beat against it and
pytest-django's test database, with short heartbeat / reaper / retry timings. Nothing here
touches the machine's Redis (6379) or PostgreSQL server process."""

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

from portal import launch
from tests import servers

CELERY_APP = "portal.celery"

# Short timings so each drill ends in seconds; every bound a drill asserts derives from these.
TIMINGS = {
    "HEARTBEAT_TEST_S": "0.5",
    "HEARTBEAT_VANTAGE_S": "1",
    # Longer than a worker takes to come back after a kill: only a vantage that stays away is offline.
    "HEARTBEAT_VANTAGE_OFFLINE_S": "15",
    "HEARTBEAT_TEST_LOST_S": "4",
    "REAPER_INTERVAL_S": "1",
    "REAPER_QUEUED_S": "120",
    "WATCHDOG_GRACE_S": "3",
    "RETRY_BASE_S": "0.5",
    "RETRY_MAX_S": "2",
    "SERVER_BUSY_RETRIES": "40",
    "PROBER_MARGIN_S": "10",
}


def database_url():
    from django.db import connection

    db = connection.settings_dict
    user = f"{db['USER']}@" if db["USER"] else ""
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{user}{db['HOST'] or '127.0.0.1'}{port}/{db['NAME']}"


class RedisServer:
    """A redis-server of the test's own; stop() is a clean shutdown (the AOF is written),
    kill() a crash. start() again reuses the port and the data directory."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = servers.free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = None

    def start(self):
        log = self.dir / "redis.log"
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--logfile",
                str(log),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        servers.wait_until(lambda: servers.listening(self.port), 10, f"redis-server on {self.port}", self.proc, log)
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=2)


class Proc:
    def __init__(self, name, proc, log):
        self.name, self.proc, self.log = name, proc, log

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def children(self):
        """PIDs of the direct children (the prefork pool)."""
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == self.proc.pid and fields[0] != "Z":
                    pids.append(int(entry))
        return pids

    def kill(self, group=False):
        """SIGKILL the main process (group=False) or its whole process group."""
        if group:
            os.killpg(self.proc.pid, signal.SIGKILL)
        else:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def tail(self, n=4000):
        return self.log.read_text()[-n:] if self.log.exists() else ""


class Cluster:
    """Starts workers, a housekeeping worker and beat on demand; stop() ends them all."""

    def __init__(self, directory, redis, cache_key_prefix, extra_env=None):
        self.dir = Path(directory)
        self.redis = redis
        self.procs = []
        self.env = dict(
            os.environ,
            DATABASE_URL=database_url(),
            REDIS_URL=redis.url,
            CACHE_KEY_PREFIX=cache_key_prefix,
            PYTHONUNBUFFERED="1",
            **TIMINGS,
            **(extra_env or {}),
        )

    def _start(self, name, argv, env=None):
        log = self.dir / f"{name}.log"
        with open(log, "a") as out:
            proc = subprocess.Popen(
                argv,
                cwd=servers.REPO,
                env=dict(self.env, **(env or {})),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        handle = Proc(name, proc, log)
        self.procs.append(handle)
        return handle

    def worker(self, vantage=None, concurrency=None):
        """A vantage's worker (its queue only), ready once its Vantage row exists; its command
        line is make run's and compose's (portal/launch.py)."""
        from portal.measure.models import Vantage

        vantage = vantage or f"faults-{secrets.token_hex(3)}"
        handle = self._start(
            f"worker-{vantage}-{len(self.procs)}",
            launch.vantage_worker(vantage, concurrency=concurrency),
            env={"VANTAGE_NAME": vantage},
        )
        before = Vantage.objects.filter(name=vantage).values_list("last_seen", flat=True).first()
        servers.wait_until(
            lambda: (
                Vantage.objects.filter(name=vantage).values_list("last_seen", flat=True).first() not in (None, before)
            ),
            60,
            f"worker of {vantage}",
            handle.proc,
            handle.log,
        )
        handle.vantage = vantage
        return handle

    def alerts(self):
        """The alert notices' worker, as make run and compose start it (portal/launch.py)."""
        return self._start(f"alerts-{len(self.procs)}", launch.alerts_worker(node=f"alerts-{secrets.token_hex(3)}"))

    def housekeeping(self):
        """The worker of the shared queue (reaper, watchdog, sweeps), as docker-compose runs it."""
        return self._start(
            f"housekeeping-{len(self.procs)}", launch.housekeeping_worker(node=f"housekeeping-{secrets.token_hex(3)}")
        )

    def beat(self):
        return self._start(f"beat-{len(self.procs)}", launch.beat())

    def stop(self):
        # All at once (each warm shutdown takes seconds), then wait for each.
        for handle in self.procs:
            if handle.alive():
                try:
                    os.killpg(handle.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for handle in reversed(self.procs):
            servers.stop(handle.proc)

    def logs(self):
        return "\n".join(f"--- {h.name} ---\n{h.tail()}" for h in self.procs)


def wait_for(predicate, timeout, what, cluster=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} not within {timeout} s" + (f"\n{cluster.logs()}" if cluster else ""))


def celery_app():
    import importlib

    return importlib.import_module(CELERY_APP).app
