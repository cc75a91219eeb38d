"""One throughput test at a time per vantage (issue 25): two tests from one host to two sites
would share its uplink and CPU and measure each other. Real workers started with make run's
command line, real `iperf3 -s` servers on loopback; overlap is judged on the stored
started_at / finished_at."""

import pytest

from portal.measure.dispatch import queue_measurement
from portal.measure.models import Measurement, Vantage
from portal.sweeps import planning
from portal.sweeps.summary import run_totals
from tests import factories, servers
from tests.sweeps.conftest import make_sweep

pytestmark = pytest.mark.e2e


def _cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().split(b"\0")


def _assert_one_at_a_time(measurements):
    intervals = sorted((m.started_at, m.finished_at, m.site.slug) for m in measurements)
    assert all(start is not None and end is not None for start, end, _ in intervals), intervals
    for (_, end, _), (start, _, _) in zip(intervals, intervals[1:]):
        assert end <= start, f"tests of one vantage overlapped: {intervals}"


def test_one_vantage_two_sites_queued_at_once_never_overlap(celery_worker):
    # The default worker runs one test at a time: its pool has one process.
    args = _cmdline(celery_worker.proc.pid)
    assert args[args.index(b"--concurrency") + 1] == b"1"
    vantage = Vantage.objects.get(name=celery_worker.name)
    assert vantage.max_concurrent_tests == 1
    with servers.iperf_server() as first_port, servers.iperf_server() as second_port:
        sites = [
            factories.make_site(slug="turn-a", port=first_port),
            factories.make_site(slug="turn-b", port=second_port),
        ]
        queued = [queue_measurement(site=site, vantage=vantage, mode="full", duration_s=3) for site in sites]
        servers.wait_until(
            lambda: (
                not Measurement.objects.filter(pk__in=[m.pk for m in queued], status__in=["queued", "running"]).exists()
            ),
            40,
            "both tests finished",
        )
    rows = list(Measurement.objects.filter(pk__in=[m.pk for m in queued]).select_related("site"))
    assert [(m.status, m.failure_code) for m in rows] == [("done", "")] * 2, [m.failure_reason for m in rows]
    _assert_one_at_a_time(rows)


def test_two_workers_of_one_vantage_take_turns_and_sweep_finishes(start_worker):
    """A second worker on the same queue (a host restarted while the old worker drains, two
    hosts given one name) doubles the pool; the claim still holds the vantage to its one test,
    and the waiting test is retried (never failed) until its turn: every cell ends done."""
    first = start_worker()
    start_worker(name=first.name)
    with servers.iperf_server() as first_port, servers.iperf_server() as second_port:
        factories.make_site(slug="sweep-a", port=first_port)
        factories.make_site(slug="sweep-b", port=second_port)
        run = planning.fire(make_sweep("turns", modes_text="full", duration_s=3).pk, trigger="command")
        servers.wait_until(lambda: run_totals(run).finished, 50, "every cell final")
    rows = list(Measurement.objects.filter(site__slug__in=["sweep-a", "sweep-b"]).select_related("site"))
    assert sorted((m.site.slug, m.status, m.failure_code) for m in rows) == [
        ("sweep-a", "done", ""),
        ("sweep-b", "done", ""),
    ], [m.failure_reason for m in rows]
    assert run_totals(run).counts["done"] == 2
    _assert_one_at_a_time(rows)
    logs = "".join(path.read_text() for path in servers.ARTIFACTS.glob(f"celery-{first.name}-*.log"))
    assert "vantage busy" in logs, "the two workers never met at the claim: this proved nothing"
