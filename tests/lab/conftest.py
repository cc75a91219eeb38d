"""Fixtures for the path lab tests: the lab module, the built delay line, skip reasons."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "prober" / "lab"))

import labctl  # noqa: E402

QUICKPROBE = ROOT / "prober" / "build" / "quickprobe"


@pytest.fixture(scope="session", autouse=True)
def built_delayline():
    # `make test` builds the prober, not the lab; build the delay line here so a fresh
    # clone does not skip the lab tests for want of a binary (make is a no-op when fresh).
    r = subprocess.run(["make", "-s", "-C", str(ROOT / "prober" / "lab")], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"building the delay line failed:\n{r.stdout}{r.stderr}")
    return labctl.DELAYLINE


@pytest.fixture
def lab_ready(built_delayline):
    """Skip (with the reason) where the lab cannot run: no root, no /dev/net/tun, no netns."""
    reason = labctl.lab_unavailable_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def make_lab(lab_ready, tmp_path):
    """Bring up labs for one test; every one is torn down even when the test fails."""
    labs = []

    def make(**spec):
        path = labctl.PathSpec(**spec)
        lab = labctl.Lab(path, log_dir=tmp_path)
        labs.append(lab)
        return lab.__enter__()

    yield make
    for lab in labs:
        lab.close()


@pytest.fixture
def quickprobe(lab_ready):
    if not QUICKPROBE.exists():
        pytest.skip(f"{QUICKPROBE} is not built: run `make prober`")
    return QUICKPROBE


def cpu_times():
    """(steal, total) jiffies of all CPUs from /proc/stat: what the hypervisor took, of all."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest times are inside user / nice)
    return fields[7], sum(fields[:8])


def steal_share(before, after):
    """The share of CPU time the hypervisor took between two cpu_times() readings."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def judged_on_a_run_the_host_did_not_stall(attempts, run):
    """The first of up to `attempts` runs that passed, or that failed with no stall to explain it.

    A VM whose hypervisor steals CPU (5-40 % in the seconds of a lab run, seen on these hosts)
    stalls the userspace delay line or the endpoints, and a run then says nothing of the lab:
    the link idles, RTTs stretch. `run(attempt)` does one run on a fresh lab and returns
    (passed, stall, result), stall being a description of the stall it saw or None. A run
    that failed and saw none is returned, for the caller's asserts to fail on; three stalled
    failures skip, with their figures.
    """
    stalled = []
    for attempt in range(attempts):
        passed, stall, result = run(attempt)
        if passed or stall is None:
            return result, stalled
        stalled.append(stall)
    pytest.skip(f"the host stalled the lab in {attempts} runs: {stalled}")


def stall_seen(steal, late_us, late_limit_us):
    """A description of the stall a run saw (CPU steal of 3 % or more, or a packet released
    later than the run can absorb), or None for a run the host left alone."""
    if steal < 0.03 and late_us < late_limit_us:
        return None
    return f"steal {steal:.0%}, latest release {late_us / 1e3:.1f} ms"
