"""The one launcher of the Celery command lines (portal/launch.py): what it starts for each role,
and a bad option refused before anything starts."""

import subprocess
import sys

from portal import launch
from tests import servers


def test_launch_housekeeping_worker_takes_the_shared_queue_one_at_a_time():
    argv = launch.housekeeping_worker()
    assert argv[:6] == [sys.executable, "-m", "celery", "-A", "portal", "worker"]
    assert argv[argv.index("-Q") + 1] == "celery"
    assert argv[argv.index("--concurrency") + 1] == "1"
    assert argv[argv.index("-n") + 1] == "housekeeping@%h"
    assert "-B" not in argv  # beat is a process of its own
    for flag in launch.COMMON_WORKER_FLAGS:
        assert flag in argv


def test_launch_beat_uses_the_database_scheduler():
    assert launch.beat(max_interval=1)[5:] == [
        "beat",
        "-S",
        "django_celery_beat.schedulers:DatabaseScheduler",
        "--max-interval",
        "1",
        "-l",
        "INFO",
    ]


def test_launch_command_refuses_a_concurrency_below_one():
    out = subprocess.run(
        [sys.executable, "-m", "portal.launch", "vantage", "--concurrency", "0"],
        cwd=servers.REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--concurrency 0: must be at least 1" in out.stderr
