"""Two vantages for real (issue 25): two vantage workers (two names, two queues) measure one
site into one portal; the site page, both path pages and the grid show both; one vantage
stopped mid-sweep leaves the other's cells done and its own skipped, saying why. Loopback
for both paths (a network namespace per vantage would need root)."""

import secrets
import time

import pytest

from portal.measure import tasks
from portal.measure.models import Measurement
from portal.sweeps import planning
from portal.sweeps.summary import run_grid, run_totals
from tests import factories, servers
from tests.sweeps.conftest import make_sweep

pytestmark = pytest.mark.e2e


def _done_count(run, vantage):
    return Measurement.objects.filter(sweep_cell__run=run, vantage__name=vantage, status="done").count()


def test_two_vantages_one_site_one_stopped_mid_sweep(client, start_worker, iperf3_port, settings):
    # Twelve missed beats of the workers' 0.5 s heartbeat: room for a loaded shared machine.
    settings.HEARTBEAT_VANTAGE_OFFLINE_S = 6.0
    tag = secrets.token_hex(3)
    east = start_worker(name=f"east-{tag}")
    west = start_worker(name=f"west-{tag}")
    site = factories.make_site(name="Shared target", slug=f"shared-{tag}", port=iperf3_port)
    sweep = make_sweep(f"two-{tag}", modes_text="full", streams_text="1,2,3,4", duration_s=2)
    run = planning.fire(sweep.pk, trigger="command")
    assert run_totals(run).cells == 8  # 4 settings x 2 vantages, one site

    # West stops (as `compose stop` does) as soon as it has a result: the site serves one
    # test at a time and whichever vantage claims it first may run several before the other
    # gets a turn, so waiting for both could see west finish its whole share first.
    servers.wait_until(lambda: _done_count(run, west.name) >= 1, 60, "a done cell from west")
    west.stop()
    west_done = _done_count(run, west.name)
    assert west_done < 4, "west finished before it was stopped: this proved nothing"

    # The housekeeping worker's beat task, run here on its schedule's behalf.
    def settled():
        tasks.reap()
        return run_totals(run).finished

    deadline = time.monotonic() + 60
    while not settled():
        assert time.monotonic() < deadline, run_totals(run).counts
        time.sleep(0.5)

    _, rows, totals = run_grid(run)
    cells = {row["vantage"]: [(c.state, c.reason) for c in row["cells"]] for row in rows}
    assert cells[east.name] == [("done", "")] * 4
    assert sorted(cells[west.name]) == [("done", "")] * west_done + [("skipped", "vantage offline")] * (4 - west_done)
    assert (totals.counts["done"], totals.counts["skipped"], totals.counts["failed"]) == (
        4 + west_done,
        4 - west_done,
        0,
    )
    skipped = Measurement.objects.filter(vantage__name=west.name, status="failed")
    assert {m.failure_code for m in skipped} == {"vantage_offline"}
    assert all(m.failure_reason.startswith(f"vantage {west.name} is offline: no heartbeat") for m in skipped)
    assert not Measurement.objects.filter(status__in=("queued", "running")).exists()
    # Never two at once on the one site, whichever vantage.
    intervals = sorted(Measurement.objects.filter(status="done").values_list("started_at", "finished_at"))
    for (_, end), (start, _) in zip(intervals, intervals[1:]):
        assert end <= start, intervals

    # One portal shows both paths: the site page lists them, each path page has its own tests.
    html = client.get(f"/sites/{site.slug}/").content.decode()
    for name in (east.name, west.name):
        assert f'<a href="?vantage={name}">{name} → Shared target</a>' in html
    east_page = client.get(f"/sites/{site.slug}/?vantage={east.name}").content.decode()
    assert f"Path {east.name} → Shared target" in east_page
    assert "4 measurements: 4 done, 0 failed" in east_page
    west_page = client.get(f"/sites/{site.slug}/?vantage={west.name}").content.decode()
    assert f"Path {west.name} → Shared target" in west_page
    assert f"4 measurements: {west_done} done, {4 - west_done} failed" in west_page
    grid = client.get("/grid/").content.decode()
    for name in (east.name, west.name):
        assert f"<th>{name}</th>" in grid
        assert f'href="/sites/{site.slug}/?vantage={name}">–<' not in grid  # a result in each path's cell
        assert f'href="/sites/{site.slug}/?vantage={name}">' in grid
    run_page = client.get(run.get_absolute_url()).content.decode()
    assert run_page.count("vantage offline") >= 4 - west_done
