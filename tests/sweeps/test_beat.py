"""A real beat process (django-celery-beat's DatabaseScheduler) fires a sweep on a short
interval, a real worker plans it and measures a real iperf3 server; pausing the sweep stops
the firings without restarting beat."""

import os
import secrets
import subprocess
import time

import pytest
import redis
from django_celery_beat.models import PeriodicTask, PeriodicTasks

from portal import launch
from portal.measure.models import Vantage
from portal.sweeps.models import Sweep, SweepRun
from portal.sweeps.summary import run_totals
from tests import factories, servers
from tests.e2e.conftest import _database_url

from .conftest import make_sweep

pytestmark = pytest.mark.e2e


@pytest.fixture
def processes(transactional_db, quickprobe_bin, cache_key_prefix, settings):
    """Starts celery processes against the test database; stops them all at the end."""
    started = []

    def start(kind, argv, env_extra):
        env = dict(
            os.environ,
            DATABASE_URL=_database_url(),
            CACHE_KEY_PREFIX=cache_key_prefix,
            PYTHONUNBUFFERED="1",
            **env_extra,
        )
        servers.ARTIFACTS.mkdir(exist_ok=True)
        log = servers.ARTIFACTS / f"sweeps-{kind}-{secrets.token_hex(3)}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                argv,
                cwd=servers.REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        started.append(proc)
        return proc, log

    try:
        yield start
    finally:
        for proc in started:
            servers.stop(proc)


def test_beat_fires_sweep_on_interval_and_pause_stops_it(processes, iperf3_port, settings):
    factories.make_site(slug="loopback", host="127.0.0.1", port=iperf3_port)
    name = f"e2e-{secrets.token_hex(4)}"
    # Engineers and CI share one Redis: the sweep's firings go to a queue of this test's own
    # instead of the shared `celery` queue, where another test's worker could take them.
    own_queue = f"sweeps-test-{name}"
    common = {
        "VANTAGE_NAME": name,
        "HEARTBEAT_VANTAGE_S": "0.5",
        "HEARTBEAT_TEST_S": "0.5",
        "REAPER_INTERVAL_S": "86400",
    }
    worker, worker_log = processes("worker", launch.vantage_worker(name, extra_queues=[own_queue]), common)
    servers.wait_until(lambda: Vantage.objects.filter(name=name).exists(), 60, "celery worker", worker, worker_log)

    sweep = make_sweep("every-2s", every_text="2s", duration_s=3)
    PeriodicTask.objects.filter(pk=sweep.periodic_task_id).update(queue=own_queue)
    PeriodicTasks.update_changed()
    beat, beat_log = processes("beat", launch.beat(max_interval=1), common)
    try:

        def a_run_done():
            runs = SweepRun.objects.filter(sweep=sweep, trigger="beat")
            return any(run_totals(run).counts["done"] == 1 for run in runs)

        servers.wait_until(a_run_done, 90, "a beat-fired sweep run with a done cell", beat, beat_log)
        fired = SweepRun.objects.filter(sweep=sweep, trigger="beat").count()
        assert fired >= 1

        # Pause through the same save the admin uses: beat reloads its table, no restart.
        sweep = Sweep.objects.get(pk=sweep.pk)
        sweep.enabled = False
        sweep.save()
        time.sleep(3)  # a firing already on its way may still land
        after_pause = SweepRun.objects.filter(sweep=sweep).count()
        time.sleep(6)  # three intervals
        assert SweepRun.objects.filter(sweep=sweep).count() == after_pause
        assert beat.poll() is None, beat_log.read_text()[-2000:]
    finally:
        redis.Redis.from_url(settings.REDIS_URL).delete(own_queue, f"vantage.{name}")
