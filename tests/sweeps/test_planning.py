import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.measure.models import Measurement, Site
from portal.sweeps import planning
from portal.sweeps.models import SweepCell, SweepRun
from portal.sweeps.summary import run_grid, run_totals
from tests import factories

from .conftest import make_sweep


def _cells(run):
    return [
        (
            c.site.slug,
            c.vantage.name,
            c.mode,
            c.window_bytes,
            c.streams,
            c.skip_code,
            c.measurement.status if c.measurement else None,
        )
        for c in SweepCell.objects.filter(run=run).select_related("site", "vantage", "measurement")
    ]


def test_plan_every_site_vantage_and_setting_once(network):
    sweep = make_sweep(windows_text="64K,1M", streams_text="1,16")
    run = planning.fire(sweep.pk, trigger="command")
    cells = _cells(run)
    # 2 enabled sites x 3 enabled vantages (east, gone, west) x 4 settings
    assert len(cells) == 24
    assert {c[:2] for c in cells} == {(s, v) for s in ("alpha", "bravo") for v in ("east", "gone", "west")}
    assert {(c[3], c[4]) for c in cells} == {(65536, 1), (65536, 16), (1048576, 1), (1048576, 16)}
    queued = [c for c in cells if c[6] == "queued"]
    assert len(queued) == 16 and all(c[5] == "" for c in queued)
    assert {c[5] for c in cells if c[1] == "gone"} == {"vantage_offline"}
    assert Measurement.objects.filter(requested_by=None, duration_s=5, status="queued").count() == 16
    assert SweepRun.objects.get(pk=run.pk).status == "planned"


def test_plan_chosen_disabled_site_skipped_with_reason(network):
    sweep = make_sweep(
        all_sites=False,
        sites=[Site.objects.get(slug="zulu-off").pk, network[0][0].pk],
        all_vantages=False,
        vantages=[network[1][0].pk],
    )
    run = planning.fire(sweep.pk, trigger="command")
    assert sorted((c[0], c[5]) for c in _cells(run)) == [("alpha", ""), ("zulu-off", "site_disabled")]
    _, rows, totals = run_grid(run)
    reasons = {row["site_slug"]: row["cells"][0].reason for row in rows}
    assert reasons == {"alpha": "", "zulu-off": "the site is disabled"}
    assert (totals.cells, totals.counts["skipped"], totals.counts["queued"], totals.finished) == (2, 1, 1, False)


def test_plan_skips_setting_still_pending_from_earlier_run(network):
    sweep = make_sweep(all_vantages=False, vantages=[network[1][0].pk])
    first = planning.fire(sweep.pk, trigger="command")
    done = SweepCell.objects.filter(run=first, site__slug="alpha").get().measurement
    Measurement.objects.filter(pk=done.pk).update(status="done", bytes_sent=1000)
    second = planning.fire(sweep.pk, trigger="command")
    assert sorted((c[0], c[5]) for c in _cells(second)) == [("alpha", ""), ("bravo", "pending")]


def test_plan_budget_spent_skips_site(network):
    alpha = network[0][0]
    sweep = make_sweep(all_vantages=False, vantages=[network[1][0].pk], streams_text="1,4", budget_text="10M")
    first = planning.fire(sweep.pk, trigger="command")
    # alpha's two tests sent 6 MiB each: 12 MiB > the 10 MiB budget. bravo's sent 1 MiB each.
    for cell in SweepCell.objects.filter(run=first).select_related("measurement"):
        sent = 6 * 2**20 if cell.site_id == alpha.pk else 2**20
        Measurement.objects.filter(pk=cell.measurement_id).update(status="done", bytes_sent=sent)
    second = planning.fire(sweep.pk, trigger="command")
    assert sorted((c[0], c[4], c[5]) for c in _cells(second)) == [
        ("alpha", 1, "budget_spent"),
        ("alpha", 4, "budget_spent"),
        ("bravo", 1, ""),
        ("bravo", 4, ""),
    ]
    assert run_totals(second).counts["skipped"] == 2


def test_plan_budget_counts_expected_cost_within_run(network):
    alpha = network[0][0]
    sweep = make_sweep(
        all_sites=False,
        sites=[alpha.pk],
        all_vantages=False,
        vantages=[network[1][0].pk],
        streams_text="1,4",
        budget_text="10M",
    )
    first = planning.fire(sweep.pk, trigger="command")
    # Each setting cost 3 MiB last time: 6 MiB spent, room for one more 3 MiB test of the two.
    Measurement.objects.filter(sweep_cell__run=first).update(status="done", bytes_sent=3 * 2**20)
    second = planning.fire(sweep.pk, trigger="command")
    assert [(c[4], c[5]) for c in _cells(second)] == [(1, ""), (4, "budget_spent")]


def test_plan_congestion_unavailable_on_vantage_skipped(network):
    factories.make_vantage(name="renoonly", congestion_controls=["reno"])
    sweep = make_sweep(
        all_sites=False,
        sites=[network[0][0].pk],
        all_vantages=False,
        vantages=[network[1][0].pk],
        congestion_text="bbr",
    )
    sweep.vantages.add(*[v.pk for v in type(network[1][0]).objects.filter(name="renoonly")])
    run = planning.fire(sweep.pk, trigger="command")
    assert sorted((c[1], c[5]) for c in _cells(run)) == [("east", ""), ("renoonly", "congestion_unavailable")]


def test_plan_query_count_does_not_grow_with_cells(network):
    def queries_for(n_sites):
        for i in range(n_sites):
            factories.make_site(slug=f"bulk-{n_sites}-{i}")
        sweep = make_sweep(name=f"bulk-{n_sites}", windows_text="64K,1M", streams_text="1,4,16")
        with CaptureQueriesContext(connection) as ctx:
            planning.fire(sweep.pk, trigger="command")
        return len(ctx.captured_queries), SweepCell.objects.filter(run__sweep=sweep).count()

    small, small_cells = queries_for(2)
    large, large_cells = queries_for(60)
    assert large_cells > 10 * small_cells
    assert large == small


def test_fire_paused_sweep_from_beat_does_nothing_but_run_now_works(network):
    sweep = make_sweep(enabled=False, every_text="1h")
    assert planning.fire(sweep.pk, trigger="beat") is None
    assert planning.fire(sweep.pk, trigger="admin") is not None


def test_fire_with_slip_delays_planning_until_start_run(network, django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    from celery import current_app

    monkeypatch.setattr(current_app, "send_task", lambda name, **kw: sent.append((name, kw)))
    sweep = make_sweep(every_text="1h", slip_text="10m")
    with django_capture_on_commit_callbacks(execute=True):
        run = planning.fire(sweep.pk, trigger="beat")
    assert run.status == "scheduled" and SweepCell.objects.filter(run=run).count() == 0
    [(name, kwargs)] = sent
    assert name == "sweeps.start_run" and kwargs["args"] == [run.pk] and 0 <= kwargs["countdown"] <= 600
    assert abs((run.starts_at - run.created_at).total_seconds() - kwargs["countdown"]) < 0.01
    assert planning.start_run(run.pk) == 6  # 2 sites x 3 vantages
    assert planning.start_run(run.pk) is None  # a second delivery plans nothing


@pytest.mark.parametrize("paused", [True, False])
def test_start_run_of_sweep_paused_meanwhile_dropped(network, paused):
    sweep = make_sweep(every_text="1h", slip_text="10m")
    run = SweepRun.objects.create(sweep=sweep, trigger="beat")
    sweep.enabled = not paused
    sweep.save()
    planning.start_run(run.pk)
    assert SweepRun.objects.filter(pk=run.pk).exists() is not paused


def test_fire_sends_every_task_after_commit_and_marks_them_sent(network, django_capture_on_commit_callbacks, settings):
    import secrets

    import redis

    name = f"bulk-{secrets.token_hex(4)}"  # a queue of this test's own on the shared Redis
    vantage = factories.make_vantage(name=name)
    client = redis.Redis.from_url(settings.REDIS_URL)
    sweep = make_sweep(all_vantages=False, vantages=[vantage.pk], streams_text="1,4")
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            run = planning.fire(sweep.pk, trigger="command")
            assert client.llen(f"vantage.{name}") == 0  # nothing leaves before the commit
        assert len(callbacks) == 1
        assert client.llen(f"vantage.{name}") == 4
        rows = Measurement.objects.filter(sweep_cell__run=run)
        assert rows.count() == 4 and not rows.filter(dispatched_at__isnull=True).exists()
    finally:
        client.delete(f"vantage.{name}")
