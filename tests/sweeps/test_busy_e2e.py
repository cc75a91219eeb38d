"""A sweep cell whose iperf3 server is busy with another client's test, with a real worker and
real iperf3: the worker retries, then the cell ends skipped as busy past the retries, while
the sweep's other site is measured."""

import subprocess

import pytest

from portal.sweeps import planning
from portal.sweeps.summary import run_grid, run_totals
from tests import factories, servers
from tests.e2e.conftest import celery_worker, start_worker  # noqa: F401

from .conftest import make_sweep

pytestmark = pytest.mark.e2e


def test_busy_server_cell_skipped_after_retries_other_site_done(celery_worker, quickprobe_bin):  # noqa: F811
    with servers.iperf_server("iperf3") as busy_port, servers.iperf_server("iperf3") as free_port:
        factories.make_site(name="busy", slug="busy", port=busy_port)
        factories.make_site(name="free", slug="free", port=free_port)
        # Someone else's 40 s test holds the busy server for the whole sweep.
        other = subprocess.Popen(
            ["iperf3", "-c", "127.0.0.1", "-p", str(busy_port), "-t", "40", "-b", "10M"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            servers.wait_until(lambda: servers.processes_with(f"-p {busy_port} -t 40"), 10, "the other client")
            run = planning.fire(make_sweep("busy-check", duration_s=3).pk, trigger="command")
            servers.wait_until(lambda: run_totals(run).finished, 120, "every cell final")
        finally:
            servers.stop(other)
    _, rows, totals = run_grid(run)
    states = {row["site_slug"]: (row["cells"][0].state, row["cells"][0].reason) for row in rows}
    assert states == {"busy": ("skipped", "iperf server busy past the retries"), "free": ("done", "")}
    assert (totals.counts["done"], totals.counts["skipped"]) == (1, 1)
