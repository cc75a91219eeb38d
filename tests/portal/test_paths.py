"""The path analyses (portal/measure/paths.py) on exactly known results: per path and mode,
the window x streams optimum, time of day in the site's zone, quick vs full, the grid."""

import datetime

import pytest
from django.utils import timezone

from portal.measure import paths
from tests import factories

pytestmark = pytest.mark.django_db

NOW = timezone.now()


def _done(site, vantage, minutes_ago=60, mode="quick", bps=100e6, streams=1, window=None, congestion="", **extra):
    when = NOW - datetime.timedelta(minutes=minutes_ago)
    result = factories.sample_result_event(
        mode=mode, quick_bps=bps, cumulative_bps=bps, full_bps=bps if mode != "quick" else None
    )
    return factories.make_done_measurement(
        site=site,
        vantage=vantage,
        mode=mode,
        result=result,
        created_at=when,
        streams=streams,
        window_bytes=window,
        congestion=congestion,
        **extra,
    )


def test_settings_matrix_optimum_is_cheapest_within_ten_percent(site, vantage, make_vantage):
    # streams x window medians: P1 64K 100, P1 1M 500, P4 64K 400, P4 1M 540 (best), P8 1M 530;
    # three runs each, paths.MIN_RUNS (issue 27: a cell of fewer is "too few runs").
    for rates, streams, window in (
        ((90e6, 100e6, 110e6), 1, 65536),
        ((500e6,) * 3, 1, 1 << 20),
        ((400e6,) * 3, 4, 65536),
        ((540e6, 530e6, 550e6), 4, 1 << 20),
        ((530e6,) * 3, 8, 1 << 20),
    ):
        for i, bps in enumerate(rates):
            _done(site, vantage, minutes_ago=10 + i, bps=bps, streams=streams, window=window)
    _done(site, vantage, bps=10e9, streams=1, window=65536, mode="full")  # another mode: not in the table
    _done(site, make_vantage(), bps=10e9, streams=1, window=65536)  # another path: not in the table
    [table] = paths.settings_matrix(site.pk, vantage.pk, "quick")
    assert table["congestion"] == "default" and table["windows"] == [65536, 1 << 20] and table["tests"] == 15
    assert [(r["streams"], [c and c["value"] for c in r["cells"]]) for r in table["rows"]] == [
        (1, [100e6, 500e6]),
        (4, [400e6, 540e6]),
        (8, [None, 530e6]),
    ]
    assert (table["best"]["streams"], table["best"]["window_bytes"]) == (4, 1 << 20)
    # 500 >= 0.9 x 540 = 486: one stream with a 1 MiB window is as good and cheaper.
    assert (table["optimum"]["streams"], table["optimum"]["window_bytes"]) == (1, 1 << 20)
    assert [c["is_optimum"] for c in table["rows"][0]["cells"]] == [False, True]
    assert table["lines"] == [
        {"streams": 1, "points": [{"x": 65536, "y": 100e6, "n": 3}, {"x": 1 << 20, "y": 500e6, "n": 3}]},
        {"streams": 4, "points": [{"x": 65536, "y": 400e6, "n": 3}, {"x": 1 << 20, "y": 540e6, "n": 3}]},
        {"streams": 8, "points": [{"x": 1 << 20, "y": 530e6, "n": 3}]},
    ]
    assert table["first"] == NOW - datetime.timedelta(minutes=12) and table["last"] == NOW - datetime.timedelta(
        minutes=10
    )


def test_settings_matrix_default_window_ranks_after_explicit(site, vantage):
    for i in range(paths.MIN_RUNS):
        _done(site, vantage, minutes_ago=10 + i, bps=100e6, streams=2, window=None)
        _done(site, vantage, minutes_ago=10 + i, bps=99e6, streams=2, window=4 << 20)
    [table] = paths.settings_matrix(site.pk, vantage.pk, "quick")
    assert table["windows"] == [4 << 20, None]
    assert table["optimum"]["window_bytes"] == 4 << 20 and table["best"]["window_bytes"] is None


def test_settings_matrix_cells_below_min_runs_are_too_few_and_never_the_optimum(site, vantage):
    assert paths.MIN_RUNS == 3
    for i in range(3):
        _done(site, vantage, minutes_ago=10 + i, bps=400e6, streams=4, window=65536)
    _done(site, vantage, bps=900e6, streams=1, window=65536)  # one run: faster, cheaper, but n = 1
    _done(site, vantage, minutes_ago=20, bps=800e6, streams=1, window=1 << 20)
    _done(site, vantage, minutes_ago=21, bps=800e6, streams=1, window=1 << 20)  # two runs
    [table] = paths.settings_matrix(site.pk, vantage.pk, "quick")
    cells = {(r["streams"], c["window_bytes"]): c for r in table["rows"] for c in r["cells"] if c}
    assert [(k, c["n"], c["too_few"]) for k, c in sorted(cells.items())] == [
        ((1, 65536), 1, True),
        ((1, 1 << 20), 2, True),
        ((4, 65536), 3, False),
    ]
    assert (table["optimum"]["streams"], table["best"]["streams"]) == (4, 4)
    assert cells[(1, 65536)]["heat"] == "transparent" and not cells[(1, 65536)]["is_optimum"]
    assert table["lines"] == [{"streams": 4, "points": [{"x": 65536, "y": 400e6, "n": 3}]}]


def test_settings_matrix_without_enough_runs_has_no_optimum(site, vantage):
    _done(site, vantage, bps=400e6, streams=4, window=65536)
    [table] = paths.settings_matrix(site.pk, vantage.pk, "quick")
    assert table["optimum"] is None and table["lines"] == []


def test_settings_matrix_marks_window_limited_cells_and_keeps_cc_apart(site, vantage):
    for limited in (True, True, False):
        _done(site, vantage, bps=100e6, window=262144, congestion="cubic", window_limited=limited)
    _done(site, vantage, bps=100e6, window=262144, congestion="bbr", window_limited=False)
    bbr, cubic = paths.settings_matrix(site.pk, vantage.pk, "quick")
    assert (bbr["congestion"], cubic["congestion"]) == ("bbr", "cubic")
    assert cubic["rows"][0]["cells"][0]["window_limited"] is True and cubic["rows"][0]["cells"][0]["n"] == 3
    assert bbr["rows"][0]["cells"][0]["window_limited"] is False


def test_time_of_day_in_site_time_zone_per_setting(make_site, vantage):
    site = make_site(time_zone="America/Los_Angeles")
    day = datetime.datetime(2026, 3, 2, tzinfo=datetime.timezone.utc)
    for hour_utc, bps, streams in ((17, 100e6, 1), (17, 200e6, 1), (18, 50e6, 1), (17, 400e6, 4)):
        when = day + datetime.timedelta(hours=hour_utc)
        factories.make_done_measurement(
            site=site,
            vantage=vantage,
            created_at=when,
            streams=streams,
            result=factories.sample_result_event(quick_bps=bps),
        )
    profile = paths.time_of_day(site, vantage.pk, "quick", now=day + datetime.timedelta(days=1))
    assert profile["time_zone"] == "America/Los_Angeles" and profile["stat"] == "median"
    one, four = profile["settings"]  # most tested first
    assert one["label"] == "P1 wdefault default" and one["tests"] == 3
    # 17:00 UTC on 2 March is 09:00 in Los Angeles (PST, UTC-8).
    assert one["bps"][9] == 150e6 and one["n"][9] == 2 and one["bps"][10] == 50e6
    assert sum(v is not None for v in one["bps"]) == 2
    assert four["label"] == "P4 wdefault default" and four["bps"][9] == 400e6


def test_time_of_day_limits_settings(site, vantage):
    for streams in range(1, 8):
        _done(site, vantage, streams=streams)
    assert len(paths.time_of_day(site, vantage.pk, "quick")["settings"]) == paths.PROFILE_SETTINGS


def test_quick_vs_full_error_and_savings(site, vantage):
    for i, err in enumerate((1.0, -2.0, 3.0, -4.0, 10.0)):
        full = 100e6
        result = factories.sample_result_event(
            mode="validate",
            quick_bps=None,
            full_bps=full,
            cumulative_bps=full,
            time_saved_pct=None,
            validate={"quick_bps": full * (1 + err / 100), "error_pct": err, "quick_ci_pct": 2.0},
        )
        factories.make_done_measurement(
            site=site, vantage=vantage, mode="validate", result=result, created_at=NOW - datetime.timedelta(minutes=i)
        )
    for saved_s, saved_bytes in ((8, 1000), (9, 3000)):
        result = factories.sample_result_event(
            full_time_s=10,
            elapsed_s=10 - saved_s,
            full_bytes_estimate=5000,
            bytes_sent=5000 - saved_bytes,
            time_saved_pct=saved_s * 10.0,
            traffic_saved_pct=saved_bytes / 50,
        )
        factories.make_done_measurement(site=site, vantage=vantage, result=result)
    q = paths.quick_vs_full(site.pk, vantage.pk)
    assert q["error"]["n"] == 5
    assert q["error"]["median"] == pytest.approx(3.0)
    assert q["error"]["p90"] == pytest.approx(7.6)  # percentile_cont(0.9) of 1, 2, 3, 4, 10
    assert sorted(p["error_pct"] for p in q["points"]) == [-4.0, -2.0, 1.0, 3.0, 10.0]
    assert q["points"][0] == {
        "x": 100e6,
        "y": 101e6,
        "error_pct": 1.0,
        "ci_pct": 2.0,
        "converged": None,
        "slug": q["points"][0]["slug"],
    }
    assert q["error"]["fell_back"] == 0
    # Issue 27: saved against runs of each test's own -t (10 s) at its result's rate (9.3 Gbit/s:
    # 11.625e9 bytes each), not the prober's full_bytes_estimate: (10 - 2) + (10 - 1) s of 20 s.
    assert q["saved"] == paths.Saving(2, 17.0, 20.0, 2 * 11.625e9 - 6000, 23.25e9)
    assert q["saved"].time_pct == pytest.approx(85.0)


def test_quick_vs_full_counts_an_answer_at_the_deadline_with_its_own_error(site, vantage):
    # Issue 24: a validate run whose quick window did not converge but answered at its deadline
    # (validate.quick_answered) is an answer: its own error counts and it is no fallback; one
    # that fell back (quick_answered false: asked to run until converged) still counts 0.
    for i, (err, answered) in enumerate(((8.0, True), (30.0, False), (2.0, True))):
        full = 100e6
        result = factories.sample_result_event(
            mode="validate",
            quick_bps=None,
            full_bps=full,
            cumulative_bps=full,
            time_saved_pct=None,
            validate={
                "quick_bps": full * (1 + err / 100),
                "error_pct": err,
                "quick_ci_pct": 12.0,
                "quick_converged": False,
                "quick_answered": answered,
            },
        )
        factories.make_done_measurement(
            site=site, vantage=vantage, mode="validate", result=result, created_at=NOW - datetime.timedelta(minutes=i)
        )
    q = paths.quick_vs_full(site.pk, vantage.pk)
    assert q["error"]["n"] == 3 and q["error"]["fell_back"] == 1
    assert q["error"]["median"] == pytest.approx(2.0)  # of 0, 2, 8
    assert sorted((p["error_pct"], p["converged"]) for p in q["points"]) == [(2.0, True), (8.0, True), (30.0, False)]


def test_quick_vs_full_counts_an_unconverged_estimate_as_its_fallback(site, vantage):
    # Quick mode reports the full run when its estimate did not converge: that run's error is
    # 0 in the summary (as bench-quick counts it), while its +40 % estimate stays plotted, marked.
    for i, (err, converged) in enumerate(((1.0, True), (-2.0, True), (40.0, False), (3.0, None))):
        full = 100e6
        result = factories.sample_result_event(
            mode="validate",
            quick_bps=None,
            full_bps=full,
            cumulative_bps=full,
            time_saved_pct=None,
            validate={
                "quick_bps": full * (1 + err / 100),
                "error_pct": err,
                "quick_ci_pct": 2.0,
                "quick_converged": converged,
            },
        )
        factories.make_done_measurement(
            site=site, vantage=vantage, mode="validate", result=result, created_at=NOW - datetime.timedelta(minutes=i)
        )
    q = paths.quick_vs_full(site.pk, vantage.pk)
    assert q["error"]["n"] == 4 and q["error"]["fell_back"] == 1
    assert q["error"]["median"] == pytest.approx(1.5)  # of 0, 1, 2, 3
    assert q["error"]["p90"] == pytest.approx(2.7)  # percentile_cont(0.9) of 0, 1, 2, 3
    assert sorted((p["error_pct"], p["converged"]) for p in q["points"]) == [
        (-2.0, True),
        (1.0, True),
        (3.0, None),
        (40.0, False),
    ]


def test_chart_points_keep_modes_apart_with_error_bars(site, vantage, make_vantage):
    _done(site, vantage, minutes_ago=5, bps=100e6, quick_ci_pct=2.5, quick_converged=True)
    _done(site, vantage, minutes_ago=4, bps=90e6, quick_ci_pct=9.0, quick_converged=False)
    _done(site, vantage, minutes_ago=3, mode="full", bps=95e6)
    _done(site, vantage, minutes_ago=2, mode="validate", bps=97e6, window_limited=True)
    _done(site, vantage, minutes_ago=1, bps=99e6)  # an older prober: no error bar
    _done(site, make_vantage(), bps=1e9)
    chart = paths.chart_points(site.pk, vantage.pk)
    assert [(p["y"], p.get("ci_pct"), p.get("converged")) for p in chart["quick"]] == [
        (100e6, 2.5, True),
        (90e6, None, False),
        (99e6, None, None),
    ]
    assert [p["y"] for p in chart["full"]] == [95e6]
    assert [(p["y"], p["limited"]) for p in chart["validate"]] == [(97e6, True)]
    assert len(chart["rtt_ms"]) == 5


def test_grid_colours_latest_against_own_baseline(site, vantage, make_site, make_vantage):
    other_vantage = make_vantage(name="zz-far")
    make_site(name="Zz quiet")
    for i, bps in enumerate((100e6, 110e6, 90e6, 100e6)):
        _done(site, vantage, minutes_ago=100 - i, bps=bps)
    _done(site, vantage, minutes_ago=10, bps=60e6)  # newest: 60 % of the median 100
    # Another setting of the same path, older: not the newest, so not the cell.
    _done(site, vantage, minutes_ago=200, bps=1e9, streams=8)
    for i in range(4):
        _done(site, other_vantage, minutes_ago=50 - i, bps=500e6)
    _done(site, other_vantage, minutes_ago=5, bps=480e6, streams=1)
    grid = paths.grid()
    assert [v.name for v in grid["vantages"]] == ["local", "zz-far"]
    assert [r["site"].name for r in grid["rows"]] == ["Loopback iperf3", "Zz quiet"]
    near, far = grid["rows"][0]["cells"]
    assert (near["bps"], near["baseline"], near["level"]) == (60e6, 100e6, "bad")
    assert near["ratio"] == pytest.approx(0.6)
    assert (far["bps"], far["level"]) == (480e6, "ok")
    assert [c["level"] for c in grid["rows"][1]["cells"]] == ["none", "none"]


def test_grid_new_path_has_no_baseline(site, vantage):
    _done(site, vantage, bps=100e6)
    [cell] = paths.grid()["rows"][0]["cells"]
    assert cell["level"] == "new" and "baseline" not in cell


def test_site_paths_counts_modes_and_flags(site, vantage, make_vantage):
    far = make_vantage(name="far")
    _done(site, vantage)
    _done(site, vantage, mode="validate")
    _done(site, far, mode="full")
    factories.make_measurement(site=site, vantage=far, status="failed")
    rows = paths.site_paths(site)
    assert [(r["name"], r["total"], r["done"], r["quick"], r["full"], r["validate"]) for r in rows] == [
        ("far", 2, 1, 0, 1, 0),
        ("local", 2, 2, 1, 0, 1),
    ]
    paths.register_path_flagger(_flag_far)
    try:
        assert paths.path_flags() == {(site.pk, far.pk): "in alert: test"}
    finally:
        paths._flaggers.remove(_flag_far)


def _flag_far():
    from portal.measure.models import Vantage

    far = Vantage.objects.get(name="far")
    return {(far.measurements.first().site_id, far.pk): "in alert: test"}


def test_analyses_query_count_does_not_grow_with_rows(site, vantage, django_assert_num_queries):
    for i in range(30):
        _done(site, vantage, minutes_ago=i, streams=1 + i % 3, window=65536 * (1 + i % 2))
    for fn in (
        lambda: paths.settings_matrix(site.pk, vantage.pk, "quick"),
        lambda: paths.chart_points(site.pk, vantage.pk),
        lambda: paths.quick_vs_full(site.pk, vantage.pk),
        lambda: paths.grid(),
    ):
        fn()
    with django_assert_num_queries(2):
        paths.time_of_day(site, vantage.pk, "quick")
    with django_assert_num_queries(1):
        paths.settings_matrix(site.pk, vantage.pk, "quick")
    with django_assert_num_queries(4):  # sites, vantages, the ranked results, the alerts' flags
        paths.grid()
