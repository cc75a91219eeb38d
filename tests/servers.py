"""Real processes for the runner and e2e tests: iperf servers on free loopback ports, and
helpers that make sure whatever a test starts is gone when it ends."""

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from scripts.ports import free_port, listening, wait_until  # noqa: F401 (the tests' names for them)

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"


def stop(proc, timeout=10):
    """Ends a process started with start_new_session=True and everything in its session."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout)
        except ProcessLookupError:
            pass


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
