"""Fixtures for the prober's integration tests: the built binary, real iperf3 / iperf 2
servers on free ports (always stopped), hostile fake servers (always closed). No database."""

import pytest

from tests.prober import qp
from tests.prober.fakes import FakeIperf3


@pytest.fixture(scope="session", autouse=True)
def quickprobe_binary():
    # Fail, not skip: a missing binary is a broken build (`make test` builds it first).
    if not qp.QUICKPROBE.exists():
        pytest.fail(f"{qp.QUICKPROBE} is missing: run `make prober` first")
    return qp.QUICKPROBE


@pytest.fixture
def iperf3_server():
    srv = qp.start_server("iperf3", ["-J"])
    yield srv
    srv.stop()


@pytest.fixture
def iperf2_server():
    srv = qp.start_server("iperf2")
    yield srv
    srv.stop()


@pytest.fixture
def fake_server():
    made = []

    def make(script, **kw):
        f = FakeIperf3(script, **kw)
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()


@pytest.fixture
def procs():
    """Extra child processes a test starts (a competing iperf3 client, ...), always reaped."""
    started = []

    def start(argv):
        p = qp.Proc(argv)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()
