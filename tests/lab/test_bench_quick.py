"""bench_quick's design and arithmetic, and its report from kept runs (no traffic, fast)."""

import csv
import importlib.util
import json
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


def test_bench_default_matrix_covers_the_design_within_20_minutes():
    rows = bench.default_matrix()
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids)) == 13
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
    # 3 validate runs of 20 s + 3 quick runs (slow-start + up to 5 s) + ~2 s of lab per row,
    # when quick mode converges; the budget is 20 min.
    assert len(rows) * (3 * 21 + 3 * 5 + 2) <= 20 * 60
    assert len(bench.full_matrix()) == 147


def test_bench_quick_outcome_counts_what_the_user_got():
    conv = bench.quick_outcome({"quick_bps": 90e6, "quick_converged": True, "quick_ci_pct": 2.0}, 100e6)
    assert (conv["status"], conv["figure_mbps"], conv["ci_pct"]) == ("converged", 90.0, 2.0)
    # Not converged: the full run it fell back to is the figure.
    fell = bench.quick_outcome({"quick_bps": 90e6, "quick_converged": False}, 100e6)
    assert (fell["status"], fell["figure_mbps"], fell["estimate_mbps"]) == ("fallback", 100.0, 90.0)
    never = bench.quick_outcome({"quick_bps": None, "quick_converged": False}, 100e6)
    assert (never["status"], never["figure_mbps"]) == ("fallback", 100.0)
    # A prober from before quick_converged existed: the estimate, without an error bar.
    # what held a window that fell back open is kept; a converged one was held by nothing
    held = bench.quick_outcome({"quick_bps": 90e6, "quick_converged": False, "quick_held_by": "loss_free"}, 100e6)
    assert (held["status"], held["held_by"]) == ("fallback", "loss_free")
    assert conv["held_by"] is None
    old = bench.quick_outcome({"quick_bps": 90e6}, 100e6)
    assert (old["status"], old["figure_mbps"], old["ci_pct"]) == ("nociq", 90.0, None)
    assert bench.inside_ci(100.0, 2.0, 101.9) is True
    assert bench.inside_ci(100.0, 2.0, 97.9) is False
    assert bench.inside_ci(100.0, None, 100.0) is None


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


def _validate(full_bps, quick_bps, converged=True, ci=2.0):
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
        },
    }
    return [{"event": "start"}, *_samples(full_bps, 4.0, 0.5), res]


def _quick(quick_bps, converged=True, ci=2.0, full_bps=None, held_by=None):
    elapsed = 2.0 if converged else 20.0
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


def test_bench_row_summary_exact_figures():
    row = bench.default_matrix()[5]  # 150 Mbit/s x 70 ms: BDP 1.31 MB
    m = {
        "row": row,
        "build": "b",
        "lab": _lab_stats(),
        "validate": [_validate(100e6, 102e6), _validate(101e6, 100e6), _validate(99e6, 95e6, converged=False)],
        "quick": [_quick(103e6), _quick(100e6, ci=1.0), _quick(96e6, converged=False, full_bps=98e6)],
    }
    s, runs = bench.summarise_row(m)
    assert s["full_mbps"] == pytest.approx(100.0)
    errs = [r["error_pct"] for r in runs]
    # paired: +2/100, -1/101, fallback 0; separate vs the 100 Mbit/s mean: +3, 0, fallback -2
    assert errs == pytest.approx([2.0, -100 / 101, 0.0, 3.0, 0.0, -2.0])
    assert [r["status"] for r in runs] == ["converged"] * 2 + ["fallback"] + ["converged"] * 2 + ["fallback"]
    # 102 +/- 2 % covers 100; 100 +/- 2 % covers 101; 103 +/- 2 % misses 100; 100 +/- 1 % covers it
    assert [r["covered"] for r in runs] == [True, True, None, False, True, None]
    assert s["converged"] == 4 and s["estimates"] == 6 and s["fallbacks"] == 2
    figures = [102, 100, 99, 103, 100, 98]
    assert s["quick_cv_pct"] == pytest.approx(100 * statistics.stdev(figures) / statistics.mean(figures))
    # the 20 s runs: the three validate runs and the quick run that fell back to its 98
    assert s["full_cv_pct"] == pytest.approx(100 * statistics.stdev([100, 101, 99, 98]) / 99.5)
    # time saved per quick run: 1 - 2/20 = 90 %, twice, and the fallback's 0 %: median 90
    assert s["time_saved_pct"] == pytest.approx(90.0)
    assert s["min_time_saved_not_fallback"] == pytest.approx(90.0)
    c = bench.cc_summary([s], runs, row.cc)
    assert c["validate"]["median"] == pytest.approx(100 / 101)
    assert c["coverage"] == pytest.approx(75.0) and c["coverage_paired"] == pytest.approx(100.0)


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
    # paired |err| 1, 0, 0.98 %; separate (99, 100, 101 vs the 101 mean) 1.98, 0.99, 0 %;
    # 99 +/- 2 % just misses 101: 5 of 6 covered. Traffic: 1 - 25 MB / 252.5 MB = 90.1 %.
    assert (
        "| cubic | 1 | 1.0 / 1.0 / 1.0 | 1.0 / 1.8 / 1.9 | 0.8 / 1.0 (0.84) | 1/1 | 6/6 "
        "| 83.3 (100.0) of 6 | 90.0 / 90.1 | error met, spread met, coverage **MISSED** |"
    ) in report
    assert "time saved % | 90.0 | 90.0 | >= 85: met |" in report
    with open(out / "report-quick.csv") as fh:
        lines = list(csv.DictReader(fh))
    assert len(lines) == 12 and {x["kind"] for x in lines} == {"validate", "quick"}
    assert (out / "fig7-quick-vs-20s.png").stat().st_size > 10_000


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
    assert (
        f"### {row.id}: 0 of 6 estimates off by > 10 %, 3 fell back (held open by: loss_free 2, sawtooth 1)" in report
    )
    assert "fallback (held open by: loss_free), rule ssthresh_set at 0.50 s." in report
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
