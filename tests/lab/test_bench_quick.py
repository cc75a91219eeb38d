"""bench_quick's design and arithmetic, and its report from kept runs (no traffic, fast)."""

import csv
import importlib.util
import json
import math
import statistics
import sys

import pytest

from tests.lab.conftest import ROOT, labctl

_spec = importlib.util.spec_from_file_location("bench_quick", ROOT / "prober" / "bench" / "bench_quick.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_quick"] = bench  # dataclasses look their module up there
_spec.loader.exec_module(bench)


def test_bench_paper_formula_named_paths():
    paths = labctl.load_paths()
    # caltech: 900000 B / 8948 B = 100.6 segments -> ceil(log2) = 7 RTTs of 24 ms
    assert bench.paper_ss_s(bench.Row(paths["caltech"], "reno"), 8948) == pytest.approx(0.168)
    # rice: the server's 256 KB window, not the 1.69 MB BDP: 29.3 segments -> 5 x 45 ms
    assert bench.paper_ss_s(bench.Row(paths["rice"], "cubic"), 8948) == pytest.approx(0.225)
    # japan, 4 streams: 5.25 MB / 4 / 8948 B = 146.7 segments -> 8 x 140 ms
    assert bench.paper_ss_s(bench.Row(paths["japan"], "reno", 4), 8948) == pytest.approx(1.12)


def test_bench_rate_after_ss_uses_the_runs_own_slow_start_end():
    events = [{"event": "start"}]
    for i in range(301):
        t = i * 0.01
        # 10 MB/s before t = 1 s, then 20 MB/s
        acked = int(10e6 * min(t, 1.0) + 20e6 * max(0.0, t - 1.0))
        events.append({"event": "sample", "t": t, "bytes_acked": acked})
        if i == 100:
            events.append({"event": "slow_start_end", "t": 1.0})
    assert bench.rate_after_ss(events) == pytest.approx(160.0, rel=1e-6)
    assert bench.rate_after_ss([e for e in events if e["event"] != "slow_start_end"]) is None


def test_bench_percentile_interpolates():
    assert bench.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90) == pytest.approx(9.1)
    assert bench.percentile([5.0], 90) == 5.0
    assert bench.percentile([], 90) is None
    # a run with no estimate counts as inf: it stays inf, never NaN
    assert bench.percentile([1.0, 2.0, math.inf], 95) == math.inf
    assert bench.percentile([1.0, math.inf, math.inf], 95) == math.inf
    assert bench.percentile([1.0, 2.0, math.inf], 50) == 2.0
    assert bench.share_pct([True, False, True, True]) == 75.0
    assert bench.share_pct([]) is None


def test_bench_default_matrix_covers_the_design_within_25_minutes():
    rows = bench.default_matrix()
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids)) == 16
    # one row a cc at the internet's 1500-byte frames (issue 24)
    assert sorted(r.cc for r in rows if r.path.mtu == 1500 and r.path.name != "dialup") == ["bbr", "cubic", "reno"]
    for cc in bench.CCS:
        mine = [r for r in rows if r.cc == cc]
        bdps = {round(r.path.queue_bytes / r.path.bdp_bytes, 2) for r in mine}
        assert {0.25, 0.5, 2.0} <= bdps, (cc, bdps)
        assert {4, 8} <= {r.streams for r in mine}, cc
        assert any(r.path.jitter_ms for r in mine) and any(r.path.cross_mbps for r in mine), cc
    assert {1e-4, 1e-3} <= {r.path.loss for r in rows}
    assert {"dialup-reno-P1", "lossy-cubic-P1"} <= set(ids)  # the old miss rows stay
    rates = [r.path.rate_mbps for r in rows if r.path.name not in ("dialup", "lossy")]
    rtts = [r.path.rtt_ms for r in rows]
    assert min(rates) == 10 and max(rates) == 400 and min(rtts) == 10 and max(rtts) == 200
    assert sum(r.path.bdp_bytes >= bench.BIG_BDP for r in rows) >= 6
    # 3 validate runs of 20 s + 3 quick runs (slow-start + at most --quick-max-ms, 4 s: quick
    # mode answers by its deadline) + ~2 s of lab per row; the budget is 25 min.
    assert len(rows) * (3 * 21 + 3 * 6 + 2) <= 25 * 60
    assert len(bench.full_matrix()) == 147


def test_bench_interval_new_keys_and_old_rows():
    # issue 24's asymmetric interval, as the prober states it
    new = {"quick_bps": 100e6, "quick_lo_bps": 95e6, "quick_hi_bps": 103e6, "quick_ci_pct": 5.0}
    assert bench.interval_of(new) == (95e6, 103e6)
    assert bench.halfwidth_pct(100e6, 95e6, 103e6) == pytest.approx(5.0)
    assert bench.halfwidth_pct(100e6, 99e6, 108e6) == pytest.approx(8.0)  # the wider side, above
    # an older prober: quick_bps +/- quick_ci_pct
    assert bench.interval_of({"quick_bps": 100e6, "quick_ci_pct": 2.0}) == pytest.approx((98e6, 102e6))
    assert bench.interval_of({"quick_bps": 100e6}) == (None, None)
    assert bench.interval_of({"quick_bps": None, "quick_ci_pct": 2.0}) == (None, None)
    assert bench.halfwidth_pct(100e6, None, None) is None
    assert bench.covers(95.0, 103.0, 103.0) is True
    assert bench.covers(95.0, 103.0, 94.9) is False
    assert bench.covers(None, None, 100.0) is False  # an answer with no interval holds nothing
    assert bench.covers(95.0, 103.0, None) is None


def test_bench_answered_reads_quick_converged_on_old_rows():
    assert bench.is_answered({"quick_bps": 9e7, "quick_answered": True, "quick_converged": False}) is True
    assert bench.is_answered({"quick_bps": 9e7, "quick_answered": False, "quick_converged": False}) is False
    # before issue 24 (no quick_answered, or null): answered = converged
    assert bench.is_answered({"quick_bps": 9e7, "quick_converged": True}) is True
    assert bench.is_answered({"quick_bps": 9e7, "quick_answered": None, "quick_converged": False}) is False
    # older still (no quick_converged): quick mode entered = answered; not entered = no answer
    assert bench.is_answered({"quick_bps": 9e7}) is True
    assert bench.is_answered({"quick_bps": None, "quick_answered": True}) is False


def test_bench_quick_outcome_counts_what_the_user_got():
    conv = bench.quick_outcome(
        {
            "quick_bps": 90e6,
            "quick_answered": True,
            "quick_converged": True,
            "quick_lo_bps": 88e6,
            "quick_hi_bps": 91e6,
            "quick_ci_pct": 2.22,
            "quick_bound_by": "statistics",
            "quick_held_by": None,
        },
        None,
    )
    assert (conv["status"], conv["answered"], conv["figure_mbps"]) == ("converged", True, 90.0)
    assert (conv["lo_mbps"], conv["hi_mbps"], conv["bound_by"], conv["held_by"]) == (88.0, 91.0, "statistics", None)
    assert conv["halfwidth_pct"] == pytest.approx(200 / 90)
    # answered at its deadline: the estimate is the result, and what kept it from converging is kept
    late = bench.quick_outcome(
        {
            "quick_bps": 90e6,
            "quick_answered": True,
            "quick_converged": False,
            "quick_lo_bps": 80e6,
            "quick_hi_bps": 99e6,
            "quick_held_by": "sawtooth",
        },
        None,
    )
    assert (late["status"], late["figure_mbps"], late["held_by"]) == ("deadline", 90.0, "sawtooth")
    assert late["halfwidth_pct"] == pytest.approx(100 * 10 / 90)
    # did not answer (--until-converged): the full run was the result; the estimate at give-up stays
    fell = bench.quick_outcome({"quick_bps": 90e6, "quick_answered": False, "quick_converged": False}, 100e6)
    assert (fell["status"], fell["answered"], fell["figure_mbps"], fell["estimate_mbps"]) == (
        "fallback",
        False,
        100.0,
        90.0,
    )
    never = bench.quick_outcome({"quick_bps": None, "quick_answered": False}, 100e6)
    assert (never["status"], never["figure_mbps"], never["halfwidth_pct"]) == ("fallback", 100.0, None)
    # an old row that fell back: not answered, its interval from quick_ci_pct
    old = bench.quick_outcome({"quick_bps": 90e6, "quick_converged": False, "quick_ci_pct": 2.0}, 100e6)
    assert (old["status"], old["lo_mbps"], old["hi_mbps"]) == ("fallback", pytest.approx(88.2), pytest.approx(91.8))
    # a prober from before quick_converged existed: the estimate, without an error bar
    oldest = bench.quick_outcome({"quick_bps": 90e6}, 100e6)
    assert (oldest["status"], oldest["figure_mbps"], oldest["ci_pct"], oldest["lo_mbps"]) == ("nociq", 90.0, None, None)


def test_bench_deadline_and_savings_per_run():
    # RTT <= 100 ms: 5 s from the first byte, whatever slow-start did
    assert bench.answer_deadline_s(100.0, 3.0) == 5.0
    assert bench.answer_deadline_s(10.0, None) == 5.0
    # longer: slow-start end + 4 s
    assert bench.answer_deadline_s(140.0, 2.7) == pytest.approx(6.7)
    assert bench.answer_deadline_s(200.0, None) is None
    assert bench.on_time(True, 5.0, 5.0) is True
    assert bench.on_time(True, 5.01, 5.0) is False
    assert bench.on_time(False, 1.0, 5.0) is False  # no answer is late, however short the run
    assert bench.on_time(True, 1.0, None) is False
    assert bench.saved_pct(True, 2.0, 20.0) == pytest.approx(90.0)
    assert bench.saved_pct(False, 2.0, 20.0) == 0.0
    assert bench.saved_pct(True, None, 20.0) is None


def _samples(rate_bps, seconds, ss_end):
    out = []
    for i in range(int(seconds / 0.02) + 1):
        t = i * 0.02
        out.append(
            {
                "event": "sample",
                "t": t,
                "bytes_acked": int(rate_bps / 8 * t),
                "inst_bps": rate_bps,
                "cumu_bps": rate_bps,
                "cwnd_bytes": 1_000_000,
                "retransmits": 0,
                "streams": [
                    {
                        "cwnd_bytes": 1_000_000,
                        "ssthresh_bytes": None,
                        "rtt_us": 50_000,
                        "delivery_rate_bps": rate_bps,
                        "in_slow_start": t < ss_end,
                    }
                ],
            }
        )
    out.insert(int(ss_end / 0.02), {"event": "slow_start_end", "t": ss_end})
    return out


def _validate(full_bps, quick_bps, converged=True, ci=2.0, **vv):
    res = {
        "event": "result",
        "mode": "validate",
        "full_bps": full_bps,
        "cumulative_bps": full_bps,
        "elapsed_s": 20.0,
        "bytes_sent": int(full_bps / 8 * 20),
        "mss_bytes": 8948,
        "validate": {
            "quick_bps": quick_bps,
            "quick_converged": converged,
            "quick_ci_pct": ci,
            "quick_window_s": 1.5,
            "quick_elapsed_s": 2.0,
            "quick_bytes_sent": int(full_bps / 8 * 2),
            "slow_start_end_s": 0.5,
            "rule": "ssthresh_set",
            **vv,
        },
    }
    return [{"event": "start"}, *_samples(full_bps, 4.0, 0.5), res]


def _quick(quick_bps, converged=True, ci=2.0, full_bps=None, held_by=None, elapsed=None, **extra):
    elapsed = elapsed or (2.0 if converged else 20.0)
    res = {
        "event": "result",
        "mode": "quick",
        "quick_mode_entered": True,
        "quick_bps": quick_bps,
        "cumulative_bps": full_bps or quick_bps,
        "full_bps": None if converged else full_bps,
        "elapsed_s": elapsed,
        "bytes_sent": int(quick_bps / 8 * elapsed),
        "quick_converged": converged,
        "quick_ci_pct": ci,
        "quick_window_s": 1.5,
        "quick_held_by": held_by,
        "slow_start_end_s": 0.5,
        "rule": "ssthresh_set",
        "mss_bytes": 8948,
        **extra,
    }
    return [{"event": "start"}, *_samples(quick_bps, 2.0, 0.5), res]


def _lab_stats():
    d = {
        "drop_queue_packets": 3,
        "drop_loss_packets": 0,
        "late_max_us": 100.0,
        "cross_drop_packets": 0,
        "extra_delay_mean_us": 0.0,
        "extra_delay_sd_us": 0.0,
    }
    return {"event": "stats", "fwd": d, "rev": d, "build": "test"}


def _mixed_row():
    """Runs of one row under issue 24's prober, every kind of outcome (Mbit/s; 20 s runs of
    100, 101 and 99: median 100, mean elapsed 20 s, mean bytes 250 MB)."""
    validate = [
        # converged: +2 %, [96.9, 104.04] (5 % below, 2 % above), answered at 2 s
        _validate(
            100e6, 102e6, quick_answered=True, quick_lo_bps=96.9e6, quick_hi_bps=104.04e6, quick_bound_by="statistics"
        ),
        # answered at its deadline (4.5 s): -6 %, interval -5 % / +10 %
        _validate(
            101e6,
            94.94e6,
            converged=False,
            quick_answered=True,
            quick_lo_bps=94.94e6 * 0.95,
            quick_hi_bps=94.94e6 * 1.1,
            quick_bound_by="levels",
            quick_held_by="varying",
            quick_elapsed_s=4.5,
            quick_bytes_sent=int(101e6 / 8 * 4.5),
        ),
        # quick mode never entered: no estimate, no interval, the 20 s run is the result
        _validate(
            99e6,
            None,
            converged=False,
            ci=None,
            quick_answered=False,
            quick_lo_bps=None,
            quick_hi_bps=None,
            quick_elapsed_s=None,
            quick_bytes_sent=None,
        ),
    ]
    quick = [
        # converged: +3 % against [-2 %, +1 %]: does not hold the row's 100
        _quick(
            103e6,
            quick_answered=True,
            quick_lo_bps=103e6 * 0.98,
            quick_hi_bps=103e6 * 1.01,
            quick_bound_by="statistics",
        ),
        # answered at 5.5 s (late: the deadline is 5 s at 70 ms), 0 %, [85, 103]
        _quick(
            100e6,
            converged=False,
            elapsed=5.5,
            quick_answered=True,
            quick_lo_bps=85e6,
            quick_hi_bps=103e6,
            quick_bound_by="sawtooth",
        ),
        # --until-converged fell back to its 98 Mbit/s full run; 96 +/- 1 % at give-up
        _quick(
            96e6,
            converged=False,
            full_bps=98e6,
            held_by="loss_free",
            quick_answered=False,
            quick_lo_bps=95.04e6,
            quick_hi_bps=96.96e6,
        ),
    ]
    return validate, quick


def test_bench_row_summary_exact_figures():
    row = bench.default_matrix()[5]  # 150 Mbit/s x 70 ms: BDP 1.31 MB, deadline 5 s
    validate, quick = _mixed_row()
    m = {"row": row, "build": "b", "lab": _lab_stats(), "validate": validate, "quick": quick}
    s, runs = bench.summarise_row(m)
    assert s["full_mbps"] == pytest.approx(100.0)
    assert [r["status"] for r in runs] == ["converged", "deadline", "fallback"] * 2
    assert [r["answered"] for r in runs] == [True, True, False] * 2
    # what the user got: the answer, or the full run when there was none
    assert [r["figure_mbps"] for r in runs] == pytest.approx([102, 94.94, 99, 103, 100, 98])
    # paired vs the same connection; separate vs the row's median 100; a non-answer keeps the
    # error of its estimate at give-up (-4), or none at all
    errs = [r["error_pct"] for r in runs]
    assert errs[2] is None
    assert [e for i, e in enumerate(errs) if i != 2] == pytest.approx([2.0, -6.0, 3.0, 0.0, -4.0])
    assert [r["covered"] for r in runs] == [True, True, False, False, True, False]
    hws = [r["halfwidth_pct"] for r in runs]
    assert hws[2] is None
    assert [h for i, h in enumerate(hws) if i != 2] == pytest.approx([5.0, 10.0, 2.0, 15.0, 1.0])
    assert [r["answer_s"] for r in runs] == pytest.approx([2.0, 4.5, 20.0, 2.0, 5.5, 20.0])
    assert [r["on_time"] for r in runs] == [True, True, False, True, False, False]
    assert [r["within_5"] for r in runs] == [True, False, False, True, True, False]
    assert [r["time_saved_pct"] for r in runs] == pytest.approx([90.0, 77.5, 0.0, 90.0, 72.5, 0.0])
    assert [r["traffic_saved_pct"] for r in runs] == pytest.approx([90.0, 77.5, 0.0, 89.7, 72.5, 0.0])
    assert [r["held_by"] for r in runs] == [None, "varying", None, None, None, "loss_free"]
    assert (s["answered"], s["converged"], s["fallbacks"], s["estimates"]) == (4, 2, 2, 6)
    assert (s["on_time"], s["covered"], s["paired"]) == (3, 2, 3)
    assert s["answer_s"] == pytest.approx(5.0)  # (4.5 + 5.5) / 2
    assert s["halfwidth_pct"] == pytest.approx(7.5)  # (5 + 10) / 2 of 1, 2, 5, 10, 15, inf
    assert s["validate_max_abs_err"] == math.inf and s["quick_max_abs_err"] == pytest.approx(4.0)
    assert s["time_saved_pct"] == pytest.approx(72.5)  # separate runs: 90, 72.5, 0
    figures = [102, 94.94, 99, 103, 100, 98]
    assert s["quick_cv_pct"] == pytest.approx(100 * statistics.stdev(figures) / statistics.mean(figures))
    # the 20 s runs: the three validate runs and the quick run that fell back to its 98
    assert s["full_cv_pct"] == pytest.approx(100 * statistics.stdev([100, 101, 99, 98]) / 99.5)

    c = bench.cc_summary([s], runs, row.cc)
    assert (c["runs"], c["errors"], c["answered"]) == (6, 0, 4)
    assert (c["converged"], c["deadline"], c["fallback"], c["nociq"]) == (2, 2, 2, 0)
    assert c["answer_s"] == {"median": pytest.approx(5.0), "p95": 20.0}
    assert c["on_time"] == pytest.approx(50.0)
    # 0, 0, 72.5, 77.5, 90, 90 and 0, 0, 72.5, 77.5, 89.7, 90; every run is on a BDP >= 1 MB row
    assert c["time_saved_pct"] == c["time_saved_pct_big"] == pytest.approx(75.0)
    assert c["traffic_saved_pct"] == c["traffic_saved_pct_big"] == pytest.approx(75.0)
    assert c["halfwidth"] == {"median": pytest.approx(7.5), "p90": math.inf}
    assert (c["coverage"], c["coverage_n"]) == (pytest.approx(200 / 3), 3)
    assert (c["separate_inside"], c["separate_inside_n"]) == (pytest.approx(100 / 3), 3)
    # paired |err| 2, 6, inf; separate 3, 0, 4 (p95: 3 + 0.9 x (4 - 3))
    assert (c["validate"]["median"], c["validate"]["p95"]) == (pytest.approx(6.0), math.inf)
    assert (c["quick"]["median"], c["quick"]["p95"]) == (pytest.approx(3.0), pytest.approx(3.9))
    assert c["validate"]["within_5"] == pytest.approx(100 / 3)
    assert c["quick"]["within_5"] == pytest.approx(200 / 3)
    assert c["bound_by"] == {"statistics": 2, "levels": 1, "sawtooth": 1}
    v = bench.verdict_cc(c)
    assert {k: v[k] for k in v if k != "spread"} == {
        "deadline": False,
        "time_saved_all": False,
        "time_saved_big": False,
        "traffic_saved_all": False,
        "traffic_saved_big": False,
        "halfwidth": False,
        "coverage": False,
        "error": False,
    }


def test_bench_old_rows_count_a_fallback_as_a_miss_not_exact():
    # A run file from before issue 24: no quick_answered, no quick_lo_bps.
    row = bench.default_matrix()[5]
    m = {
        "row": row,
        "build": "b",
        "lab": _lab_stats(),
        "validate": [_validate(100e6, 95e6, converged=False, ci=2.0)],
        "quick": [_quick(100e6, ci=1.0)],
    }
    s, runs = bench.summarise_row(m)
    fell, conv = runs
    # the fallback: its estimate's own error (-5 %), not the 0 of the full run it fell back to
    assert (fell["status"], fell["answered"], fell["covered"], fell["on_time"]) == ("fallback", False, False, False)
    assert fell["error_pct"] == pytest.approx(-5.0) and fell["within_5"] is False
    assert (fell["time_saved_pct"], fell["traffic_saved_pct"]) == (0.0, 0.0)
    assert (fell["lo_mbps"], fell["hi_mbps"]) == (pytest.approx(93.1), pytest.approx(96.9))
    assert (conv["status"], conv["answered"], conv["lo_mbps"], conv["hi_mbps"]) == ("converged", True, 99.0, 101.0)
    assert conv["covered"] is True and conv["time_saved_pct"] == pytest.approx(90.0)
    c = bench.cc_summary([s], runs, row.cc)
    assert c["bound_by"] == {"not reported": 1}
    assert c["coverage"] == 0.0 and c["separate_inside"] == 100.0


def test_bench_report_rebuilt_from_kept_runs(tmp_path):
    rows = bench.default_matrix()
    chosen = [rows[5], rows[9]]
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    for row in chosen:
        for i in range(3):
            (runs_dir / f"{row.id}.validate{i}.jsonl").write_text(
                "\n".join(json.dumps(e) for e in _validate(100e6 + i * 1e6, 101e6))
            )
            (runs_dir / f"{row.id}.quick{i}.jsonl").write_text("\n".join(json.dumps(e) for e in _quick(99e6 + i * 1e6)))
        (runs_dir / f"{row.id}.lab.json").write_text(json.dumps(_lab_stats()))
    out = tmp_path / "out"
    rc = bench.main(
        ["--reuse", "--runs-dir", str(runs_dir), "--out", str(out), "--only", ",".join(r.id for r in chosen)]
    )
    assert rc == 0
    report = (out / "report-quick.md").read_text()
    # Old runs (no quick_answered, no quick_lo_bps): converged = answered, +/- quick_ci_pct.
    # Every answer at 2 s (deadline 5 s): 1 - 2 / 20 = 90 % saved; traffic: the validate runs
    # 90 %, the quick runs 1 - 24.75, 25, 25.25 MB / 252.5 MB = 90.2, 90.1, 90.0 %: median 90.
    assert (
        "| cubic | 1 | 6 | 6/6 (6 / 0 / 0) | 2.0 / 2.0 | 100.0 | 90.0 / 90.0 | 90.0 / 90.0 "
        "| deadline met, time saved met / met, traffic saved met / met |"
    ) in report
    # The bbr row (200 Mbit/s x 20 ms) has a BDP of 0.5 MB: no big-row figure.
    assert "| bbr | 1 | 6 | 6/6 (6 / 0 / 0) | 2.0 / 2.0 | 100.0 | 90.0 / - | 90.0 / - " in report
    # paired |err| 1, 0, 0.98 %: 101 +/- 2 % holds 100, 101, 102; separate (99, 100, 101 vs
    # the row's median 101) 1.98, 0.99, 0 %, and 99 +/- 2 % just misses 101: 2 of 3 inside.
    assert (
        "| cubic | 2.0 / 2.0 | 100.0 of 3 | 66.7 of 3 | 1.0 / 1.0 | 1.0 / 1.9 | 100.0 / 100.0 "
        "| 0.8 / 1.0 (0.84) | half-width met, coverage met, error met, spread met |"
    ) in report
    # bound by: not reported
    assert "| cubic | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 6 |" in report
    with open(out / "report-quick.csv") as fh:
        lines = list(csv.DictReader(fh))
    assert len(lines) == 12 and {x["kind"] for x in lines} == {"validate", "quick"}
    first = lines[0]
    assert (first["status"], first["answered"], first["lo_mbps"], first["hi_mbps"], first["halfwidth_pct"]) == (
        "converged",
        "yes",
        "98.980",
        "103.020",
        "2.000",
    )
    assert (first["answer_s"], first["deadline_s"], first["on_time"], first["within_5"]) == (
        "2.000",
        "5.000",
        "yes",
        "yes",
    )
    assert (out / "fig7-quick-vs-20s.png").stat().st_size > 10_000


def _write_runs(runs_dir, row, validate, quick):
    runs_dir.mkdir(exist_ok=True)
    for i, (v, q) in enumerate(zip(validate, quick)):
        (runs_dir / f"{row.id}.validate{i}.jsonl").write_text("\n".join(json.dumps(e) for e in v))
        (runs_dir / f"{row.id}.quick{i}.jsonl").write_text("\n".join(json.dumps(e) for e in q))
    (runs_dir / f"{row.id}.lab.json").write_text(json.dumps(_lab_stats()))


def test_bench_report_counts_every_run_of_the_new_prober(tmp_path):
    row = bench.default_matrix()[5]
    _write_runs(tmp_path / "runs", row, *_mixed_row())
    out = tmp_path / "out"
    assert bench.main(["--reuse", "--runs-dir", str(tmp_path / "runs"), "--out", str(out), "--only", row.id]) == 0
    report = (out / "report-quick.md").read_text()
    # the figures of test_bench_row_summary_exact_figures, as the report prints them
    assert (
        "| cubic | 1 | 6 | 4/6 (2 / 2 / 2) | 5.0 / 20.0 | 50.0 | 75.0 / 75.0 | 75.0 / 75.0 "
        "| deadline **MISSED**, time saved **MISSED** / **MISSED**, traffic saved **MISSED** / **MISSED** |"
    ) in report
    assert "| cubic | 7.5 / inf | 66.7 of 3 | 33.3 of 3 | 6.0 / inf | 3.0 / 3.9 | 33.3 / 66.7 | " in report
    # spread: the quick figures' 2.9 % (s.d. 2.90 of 99.49) against the 20 s runs' 1.3 % (1.29 of 99.5)
    assert (
        "| 2.9 / 1.3 (2.25) | half-width **MISSED**, coverage **MISSED**, error **MISSED**, spread **MISSED** |"
    ) in report
    assert (
        "| cc | statistics | levels | sawtooth | random_loss | growing | lt_bw | bbr_cycle | bw_rising | stalled "
        "| receiver_window | reordering | reorder_overflow | shared | capacity | short |\n" in report
    )
    assert "| cubic | 2 | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |" in report
    # the per-row table: answered, median time to answer, by deadline, median half-width, paired covered
    assert (
        f"| {row.id} | 1.00 | 0 | normal 2 ms |  | 100.0 | 100.0 | 4/6 | 5.0 | 3/6 | 7.5 | 2/3 | inf | 4.0 |" in report
    )
    assert (
        f"### {row.id}: 0 of 6 estimates off by > 10 %, 1 of 4 intervals missed the 20 s figure, "
        "2 did not answer (held open by: not entered 1, loss_free 1)"
    ) in report
    assert "Worst: validate run 2: estimate - (no interval) over 1.50 s, fallback, rule ssthresh_set" in report
    with open(out / "report-quick.csv") as fh:
        lines = list(csv.DictReader(fh))
    assert [x["status"] for x in lines] == ["converged", "deadline", "fallback"] * 2
    assert [x["bound_by"] for x in lines] == ["statistics", "levels", "", "statistics", "sawtooth", ""]
    assert [x["covered"] for x in lines] == ["yes", "yes", "no", "no", "yes", "no"]
    assert [x["on_time"] for x in lines] == ["yes", "yes", "no", "yes", "no", "no"]
    assert [x["lo_mbps"] for x in lines][3:] == ["100.940", "85.000", "95.040"]


def test_bench_fig7_points_carry_the_asymmetric_interval():
    row = bench.default_matrix()[5]
    validate, quick = _mixed_row()
    s, runs = bench.summarise_row({"row": row, "build": "b", "lab": _lab_stats(), "validate": validate, "quick": quick})
    fulls = [100.0, 101.0, 99.0]
    late = bench.fig7_point(runs[4], s["full_mbps"], fulls)  # separate, answered at the deadline
    assert late == {
        "x": 100.0,
        "y": 100.0,
        "xerr": (1.0, 1.0),
        "yerr": (pytest.approx(15.0), pytest.approx(3.0)),
        "filled": True,
    }
    paired = bench.fig7_point(runs[1], s["full_mbps"], fulls)
    assert (paired["x"], paired["xerr"], paired["filled"]) == (101.0, None, True)
    assert paired["yerr"] == pytest.approx((94.94 * 0.05, 94.94 * 0.1))
    # no answer: hollow, at the estimate it gave up with (and its interval), or at the full run
    gave_up = bench.fig7_point(runs[5], s["full_mbps"], fulls)
    assert (gave_up["y"], gave_up["filled"]) == (96.0, False)
    assert gave_up["yerr"] == pytest.approx((0.96, 0.96))
    never = bench.fig7_point(runs[2], s["full_mbps"], fulls)
    assert (never["x"], never["y"], never["yerr"], never["filled"]) == (99.0, 99.0, None, False)


def test_bench_report_says_what_held_fallbacks_open(tmp_path):
    row = bench.default_matrix()[5]
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    held = ["loss_free", "sawtooth", "loss_free"]
    for i in range(3):
        (runs_dir / f"{row.id}.validate{i}.jsonl").write_text("\n".join(json.dumps(e) for e in _validate(100e6, 101e6)))
        quick = _quick(99e6, converged=False, full_bps=100e6, held_by=held[i])
        (runs_dir / f"{row.id}.quick{i}.jsonl").write_text("\n".join(json.dumps(e) for e in quick))
    (runs_dir / f"{row.id}.lab.json").write_text(json.dumps(_lab_stats()))
    out = tmp_path / "out"
    assert bench.main(["--reuse", "--runs-dir", str(runs_dir), "--out", str(out), "--only", row.id]) == 0
    report = (out / "report-quick.md").read_text()
    # --until-converged runs that fell back: each a miss, held open by what its quick_held_by says
    assert (
        f"### {row.id}: 0 of 6 estimates off by > 10 %, 0 of 3 intervals missed the 20 s figure, "
        "3 did not answer (held open by: loss_free 2, sawtooth 1)"
    ) in report
    assert (
        "Worst: quick run 0: estimate 99.0 (95 %: 97.0-101.0) over 1.50 s, fallback (held open by: loss_free), "
        "rule ssthresh_set at 0.50 s."
    ) in report
    with open(out / "report-quick.csv") as fh:
        lines = list(csv.DictReader(fh))
    assert [x["held_by"] for x in lines if x["kind"] == "quick"] == held
    assert {x["held_by"] for x in lines if x["kind"] == "validate"} == {""}


def test_bench_one_run_a_row_reports_no_spread():
    # The large matrix runs once a row (--runs 1): a quick spread over its two estimates
    # beside a 20 s "spread" of one run is no measure, so the verdict is n/a, not missed.
    row = bench.default_matrix()[5]
    m = {
        "row": row,
        "build": "b",
        "lab": _lab_stats(),
        "validate": [_validate(100e6, 102e6)],
        "quick": [_quick(96e6, converged=False, full_bps=98e6)],
    }
    s, runs = bench.summarise_row(m)
    assert s["quick_cv_pct"] is None and s["full_cv_pct"] is None and s["spread_ratio"] is None
    c = bench.cc_summary([s], runs, row.cc)
    assert c["spread_ratio"] is None and c["rows_spread_n"] == 0
    assert bench.verdict_cc(c)["spread"] is None
    lines, verdict = bench.summary_lines([s], runs)
    assert verdict[row.cc]["spread"] is None
    assert "spread n/a (no row with two runs)" in "\n".join(lines)
