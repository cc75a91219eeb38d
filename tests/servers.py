"""Real processes for the runner and e2e tests: iperf servers on free loopback ports, and
helpers that make sure whatever a test starts is gone when it ends."""

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from scripts.ports import free_port, listening, wait_until  # noqa: F401 (the tests' names for them)

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"


def stop(proc, timeout=10):
    """Ends a process started with start_new_session=True and everything in its session."""
    stop_all([proc], timeout)


def stop_all(procs, timeout=10):
    """stop() for several processes at once: each is told to stop before any is waited for,
    so a test's two Celery workers take one warm shutdown's time (1.5-2 s), not two."""
    running = [p for p in procs if p.poll() is None]
    for proc in running:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for proc in running:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout)


@contextlib.contextmanager
def iperf_server(protocol="iperf3"):
    """A stock `iperf3 -s` or `iperf -s` on a free loopback port; yields the port."""
    for _attempt in range(3):  # the free port can be taken between our probe and iperf's bind
        port = free_port()
        ARTIFACTS.mkdir(exist_ok=True)
        log = ARTIFACTS / f"{protocol}-{port}.log"
        cmd = (
            ["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)]
            if protocol == "iperf3"
            else ["iperf", "-s", "-B", "127.0.0.1", "-p", str(port)]
        )
        with open(log, "w") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        try:
            wait_until(lambda: listening(port), 10, f"{protocol} -s on port {port}", proc, log)
        except AssertionError:
            stop(proc)
            if proc.returncode is not None and _attempt < 2:
                continue
            raise
        try:
            yield port
        finally:
            stop(proc)
        return


def processes_with(needle):
    """PIDs of live processes whose command line contains needle (zombies excluded)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state != "Z":
            pids.append(int(entry))
    return pids


# What scripts/run.py prints once every process of `make run` is up.
MAKE_RUN_READY = "Ctrl-C stops everything"
# The test run's own portal settings, which a developer running `make run` has not exported.
TEST_RUN_SETTINGS = {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}


def make_run_env(tmp_path, **overrides):
    """The environment `make run` gets from a developer's shell: this one without the test run's
    portal settings, its var directory under tmp_path."""
    env = {k: v for k, v in os.environ.items() if k not in TEST_RUN_SETTINGS}
    env.update(PORTAL_VAR_DIR=str(tmp_path / "var"), PYTHONUNBUFFERED="1", **overrides)
    return env


def start_make_run(tmp_path, env):
    """Starts scripts/run.py as `make run` does, from tmp_path (anything it writes relative to
    its working directory shows up there), its output in tmp_path / "run.log"; returns
    (proc, log). The caller waits with wait_make_run inside its own try, and stops it."""
    log = tmp_path / "run.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(REPO / "scripts" / "run.py")],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return proc, log


def wait_make_run(proc, log, timeout=90):
    """Waits until `make run` says everything is up; its log's text."""
    wait_until(lambda: MAKE_RUN_READY in log.read_text(), timeout, "make run", proc, log)
    return log.read_text()
