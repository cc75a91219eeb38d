#!/usr/bin/env python3
"""How close is quick mode to a 20 s test? Measured over emulated WAN paths (the path lab).

    make bench-quick            # default matrix: 13 rows, about 24 min
    make bench-quick FULL=1     # the large matrix: 147 rows, about 3 h 45 min (3 runs a row)
    make bench-quick FULL=1 RUNS=1   # the same rows once each: about 85 min
    bench_quick.py --only caltech-cubic-P1 --seconds 5 --runs 1   # one row, short (smoke test)
    bench_quick.py --reuse      # rebuild the report from the kept runs (no traffic)

For every matrix row a fresh lab (prober/lab/labctl.py) is brought up and the prober runs
against the real `iperf3 -s` / `iperf -s` in the far namespace, `--runs` times (default 3)
each, interleaved:
  validate -t 20: the 20 s result and what quick mode said on the same connection (paired)
  quick    -t 20: a separate quick-mode run (what a user of the portal gets)
It writes prober/bench/report-quick.md, report-quick.csv (one line per run) and the figures
(PNG), keeping the raw JSON Lines of every run in test-artifacts/bench-quick/ (not committed);
the large matrix writes to prober/bench/full/ and test-artifacts/bench-quick-full/ instead,
so that the two reports stand side by side.

A quick estimate counts with the figure its user got: `quick_bps` when it converged (or,
from a prober without `quick_converged`, when quick mode was entered), else the full run's
figure it fell back to (the paper's fallback; on the validate connection that is the 20 s
result itself, so a paired fallback has error 0 and saves nothing).
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "prober" / "lab"))
import labctl  # noqa: E402

QUICKPROBE = ROOT / "prober" / "build" / "quickprobe"
PROBER = QUICKPROBE  # --prober: bench a candidate build without installing it
BENCH_DIR = ROOT / "prober" / "bench"
RUNS_DIR = ROOT / "test-artifacts" / "bench-quick"
FULL_BENCH_DIR = BENCH_DIR / "full"  # the large matrix's report, beside the default one
FULL_RUNS_DIR = ROOT / "test-artifacts" / "bench-quick-full"
NOTES = ROOT / ".coord" / "detector-notes.md"
CCS = ("reno", "cubic", "bbr")
# Issue 7's targets, per cc over the whole matrix.
TARGETS = {
    "median_abs_err": 3.0,
    "p95_abs_err": 10.0,
    "spread_ratio": 1.5,
    "time_saved": 85.0,
    "traffic_saved": 85.0,
    "row_time_saved_min": 70.0,
    "coverage": 90.0,
}
BIG_BDP = 1_000_000
MISS_ERR_PCT = 10.0


@dataclass
class Row:
    """One matrix row: a path, a congestion control, a number of streams."""

    path: labctl.PathSpec
    cc: str
    streams: int = 1

    @property
    def id(self) -> str:
        return f"{self.path.name}-{self.cc}-P{self.streams}"


def _custom(rate, rtt, queue_bdp=1.0, *, loss=0.0, jitter=None, cross=None) -> labctl.PathSpec:
    """A path from the design: the queue a multiple of the BDP (at least 3 jumbo packets),
    jitter = (dist, ms), cross = (share of the rate, on ms, off ms)."""
    bdp = rate * 1e6 / 8 * rtt / 1e3
    name = f"r{rate:g}-{rtt:g}ms-q{queue_bdp:g}"
    desc = f"{rate:g} Mbit/s, {rtt:g} ms, queue {queue_bdp:g} x BDP"
    kw = {}
    if loss:
        name += f"-l{loss:g}"
        desc += f", loss {loss:g}"
    if jitter:
        kw.update(jitter_dist=jitter[0], jitter_ms=jitter[1])
        name += f"-j{jitter[0][0]}{jitter[1]:g}"
        desc += f", jitter {jitter[0]} {jitter[1]:g} ms"
    if cross:
        kw.update(cross_mbps=cross[0] * rate, cross_on_ms=cross[1], cross_off_ms=cross[2])
        name += f"-x{cross[0]:g}"
        desc += f", cross {cross[0] * rate:g} Mbit/s on {cross[1]:g} / off {cross[2]:g} ms"
    return labctl.PathSpec(
        name=name,
        rate_mbps=rate,
        rtt_ms=rtt,
        loss=loss,
        queue_bytes=max(27000, int(queue_bdp * bdp)),
        description=desc,
        **kw,
    )


def default_matrix() -> list[Row]:
    """13 rows chosen by hand as a fractional design (a full cross of the factors is ~150
    rows): every cc gets a 0.25, a 0.5 and a 2 x BDP buffer, a 4- and an 8-stream row, a
    jitter row and a cross-traffic row; loss 1e-4 and 1e-3 fall on different ccs; rates
    (1-400 Mbit/s) and RTTs (10-200 ms) are spread so that no two rows of a cc share a level
    and six rows have BDP >= 1 MB (the time-saved target's rows). The old dial-up (reno) and
    lossy (cubic) rows stay; BBR's tiny path is 10 Mbit/s x 150 ms with 4 streams.
    150 Mbit/s x 70 ms and 200 Mbit/s x 20 ms x 2 BDP are the paths issue 7 reports on. Each
    row: 3 validate runs of 20 s and 3 quick runs, 75 s when quick mode converges at once and
    up to 130 s when every quick run falls back (a 14th row, BBR on dial-up, did not fit)."""
    p = labctl.load_paths()
    return [
        Row(p["dialup"], "reno"),
        Row(_custom(300, 24, 0.5, loss=1e-4), "reno"),
        Row(_custom(100, 140, 2.0, jitter=("normal", 1.0)), "reno", 4),
        Row(_custom(400, 10, 0.25, cross=(0.3, 1000, 1000)), "reno", 8),
        Row(p["lossy"], "cubic"),
        Row(_custom(150, 70, 1.0, jitter=("normal", 2.0)), "cubic"),
        Row(_custom(400, 20, 0.25), "cubic", 4),
        Row(_custom(50, 200, 2.0, loss=1e-4), "cubic"),
        Row(_custom(100, 40, 0.5, cross=(0.3, 1000, 1000)), "cubic", 8),
        Row(_custom(200, 20, 2.0), "bbr"),
        Row(_custom(150, 70, 0.5, jitter=("uniform", 2.0)), "bbr"),
        Row(_custom(10, 150, 0.25, loss=1e-3), "bbr", 4),
        Row(_custom(300, 50, 1.0, loss=1e-4, cross=(0.25, 500, 1500)), "bbr", 8),
    ]


def full_matrix() -> list[Row]:
    """Every cc on rates 10/100/400 x RTTs 10/50/200 x buffers 0.25/0.5/1/2 BDP (108 rows),
    then loss, streams, jitter and cross traffic on one path each, and the named paths."""
    rows = []
    for cc in CCS:
        for rate in (10, 100, 400):
            for rtt in (10, 50, 200):
                rows += [Row(_custom(rate, rtt, q), cc) for q in (0.25, 0.5, 1.0, 2.0)]
        rows += [Row(_custom(100, 50, 1.0, loss=x), cc) for x in (1e-4, 1e-3)]
        rows += [Row(_custom(100, 50, 1.0), cc, n) for n in (4, 8)]
        rows += [Row(_custom(150, 70, 1.0, jitter=(d, 2.0)), cc) for d in ("uniform", "normal")]
        rows.append(Row(_custom(100, 40, 0.5, cross=(0.3, 1000, 1000)), cc))
        rows += [Row(path, cc) for path in labctl.load_paths().values()]
    return rows


# ---------------------------------------------------------------- running


def parse_events(text: str) -> list[dict]:
    events = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return events


def run_prober(lab: labctl.Lab, row: Row, mode: str, seconds: int, log: Path) -> list[dict]:
    argv = [
        str(PROBER),
        "-c",
        lab.far_addr,
        "-p",
        str(lab.port),
        "--json",
        "--mode",
        mode,
        "-t",
        str(seconds),
        "-C",
        row.cc,
        "-P",
        str(row.streams),
    ]
    if row.path.server == "iperf2":
        argv.append("--iperf2")
    try:
        r = lab.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        # A hung prober is a result too: record it and go on with the matrix.
        log.write_text(f"# killed after {seconds + 60} s\n")
        return [
            {"event": "error", "code": "bench_timeout", "message": f"quickprobe did not finish within {seconds + 60} s"}
        ]
    log.write_text(r.stdout + (f"\n# stderr:\n{r.stderr}" if r.stderr else ""))
    events = parse_events(r.stdout)
    if not events or events[-1].get("event") not in ("result", "error"):
        events.append(
            {"event": "error", "code": "no_result", "message": f"exit {r.returncode}: {r.stderr.strip()[-300:]}"}
        )
    return events


def final(events: list[dict]) -> dict:
    return events[-1] if events else {"event": "error", "code": "no_output"}


def prober_build() -> str:
    """Short hash of the quickprobe binary: the prober is rebuilt while others work, and a
    report must not mix builds without saying so."""
    return hashlib.sha256(PROBER.read_bytes()).hexdigest()[:12]


def run_file(runs_dir: Path, row: Row, mode: str, i: int) -> Path:
    return runs_dir / f"{row.id}.{mode}{i}.jsonl"


def measure_row(row: Row, seconds: int, runs: int, runs_dir: Path) -> dict:
    out = {"row": row, "build": prober_build(), "validate": [], "quick": []}
    with labctl.Lab(row.path, log_dir=runs_dir) as lab:
        for i in range(runs):
            for mode in ("validate", "quick"):
                out[mode].append(run_prober(lab, row, mode, seconds, run_file(runs_dir, row, mode, i)))
                time.sleep(0.3)  # let the last FIN/ACKs cross before the next connection
        out["lab"] = lab.stats()
    after = prober_build()
    if after != out["build"]:
        out["build"] += f"->{after}"
    (runs_dir / f"{row.id}.lab.json").write_text(json.dumps({**out["lab"], "build": out["build"]}))
    return out


def load_row(row: Row, runs: int, runs_dir: Path) -> dict:
    """A row measured earlier (--reuse): its runs' JSON Lines and the delay line's counters."""
    out = {"row": row, "validate": [], "quick": []}
    for i in range(runs):
        for mode in ("validate", "quick"):
            f = run_file(runs_dir, row, mode, i)
            if not f.exists():
                raise SystemExit(f"bench_quick: --reuse: {f} is missing; run without --reuse")
            out[mode].append(parse_events(f.read_text()))
    out["lab"] = json.loads((runs_dir / f"{row.id}.lab.json").read_text())
    out["build"] = out["lab"].get("build", "unknown")
    return out


# ---------------------------------------------------------------- one run


def paper_ss_s(row: Row, mss: int) -> float | None:
    """ceil(log2(ideal window / MSS)) x RTT (the paper's slow-start duration, IW = 1)."""
    window = row.path.bdp_bytes / row.streams
    if row.path.server_window:
        window = min(window, labctl.parse_size(row.path.server_window))
    if not mss or window <= mss:
        return row.path.rtt_ms / 1e3
    return math.ceil(math.log2(window / mss)) * row.path.rtt_ms / 1e3


def rate_after_ss(events: list[dict]) -> float | None:
    """The 20 s run's rate from its own slow-start end to its end: the steady state that the
    20 s figure dilutes with slow-start (most on long paths)."""
    ends = [e for e in events if e["event"] == "slow_start_end"]
    samples = [e for e in events if e["event"] == "sample"]
    if not ends or not samples:
        return None
    after = [x for x in samples if x["t"] >= ends[0]["t"]]
    if len(after) < 2 or after[-1]["t"] - after[0]["t"] < 1.0:
        return None
    a, b = after[0], after[-1]
    return (b["bytes_acked"] - a["bytes_acked"]) * 8 / (b["t"] - a["t"]) / 1e6


def _mbps(x):
    return None if x is None else x / 1e6


def quick_outcome(q: dict | None, fallback_bps: float | None) -> dict:
    """What a quick estimate gave its user. q holds quick_bps, quick_converged, quick_ci_pct,
    quick_window_s (a quick run's result, or validate's object). status: converged; nociq
    (entered, from a prober that reports no convergence); fallback (not converged, or quick
    mode never entered: the full run's figure, fallback_bps, is the result)."""
    q = q or {}
    conv, est = q.get("quick_converged"), q.get("quick_bps")
    if est and conv is True:
        status, figure = "converged", est
    elif est and conv is None and "quick_converged" not in q:
        status, figure = "nociq", est
    else:
        status, figure = "fallback", fallback_bps
    return {
        "status": status,
        "figure_mbps": _mbps(figure),
        "estimate_mbps": _mbps(est),
        "ci_pct": q.get("quick_ci_pct"),
        "window_s": q.get("quick_window_s"),
        "rule": q.get("rule"),
        "ss_end_s": q.get("slow_start_end_s"),
        # what kept a window that did not converge open (EVENTS.md: quick_held_by)
        "held_by": q.get("quick_held_by") if status == "fallback" else None,
    }


def pct(a, b):
    return None if a is None or not b else 100.0 * (a - b) / b


def inside_ci(estimate_mbps, ci_pct, truth_mbps) -> bool | None:
    if estimate_mbps is None or ci_pct is None or not truth_mbps:
        return None
    return abs(truth_mbps - estimate_mbps) <= estimate_mbps * ci_pct / 100.0


def validate_run(events: list[dict]) -> dict:
    """One validate run: its 20 s figure and the paired quick estimate."""
    v = final(events)
    if v.get("event") != "result":
        return {"kind": "validate", "error": v.get("code", "?")}
    full = v.get("full_bps") or v.get("cumulative_bps")
    vv = v.get("validate") or {}
    o = quick_outcome(vv, full)
    o.update(
        kind="validate",
        full_mbps=_mbps(full),
        error_pct=pct(o["figure_mbps"], _mbps(full)),
        covered=inside_ci(o["estimate_mbps"], o["ci_pct"], _mbps(full)) if o["status"] == "converged" else None,
        elapsed_s=v.get("elapsed_s"),
        bytes_sent=v.get("bytes_sent"),
        quick_elapsed_s=vv.get("quick_elapsed_s") if o["status"] != "fallback" else v.get("elapsed_s"),
        quick_bytes_sent=vv.get("quick_bytes_sent") if o["status"] != "fallback" else v.get("bytes_sent"),
        full_after_ss_mbps=rate_after_ss(events),
        mss=v.get("mss_bytes"),
    )
    return o


def quick_run(events: list[dict]) -> dict:
    """One separate quick run: the estimate its user got, its time and traffic."""
    q = final(events)
    if q.get("event") != "result":
        return {"kind": "quick", "error": q.get("code", "?")}
    fallback = q.get("full_bps") or q.get("cumulative_bps")
    o = quick_outcome(q, fallback)
    o.update(kind="quick", elapsed_s=q.get("elapsed_s"), bytes_sent=q.get("bytes_sent"), mss=q.get("mss_bytes"))
    return o


# ---------------------------------------------------------------- one row


def cv_pct(xs):
    """Run-to-run spread: sample std-dev in % of the mean (None below two values)."""
    xs = [x for x in xs if x]
    if len(xs) < 2:
        return None
    return 100.0 * statistics.stdev(xs) / statistics.mean(xs)


def summarise_row(m: dict) -> tuple[dict, list[dict]]:
    """The row's figures and its runs (validate runs, then quick runs), each a flat dict."""
    row: Row = m["row"]
    vs = [validate_run(ev) for ev in m["validate"]]
    qs = [quick_run(ev) for ev in m["quick"]]
    fulls = [v["full_mbps"] for v in vs if v.get("full_mbps")]
    full_mean = statistics.mean(fulls) if fulls else None
    full_elapsed = [v["elapsed_s"] for v in vs if v.get("elapsed_s")]
    full_bytes = [v["bytes_sent"] for v in vs if v.get("bytes_sent")]
    for q in qs:
        if "error" in q:
            continue
        q["error_pct"] = pct(q["figure_mbps"], full_mean)
        q["covered"] = inside_ci(q["estimate_mbps"], q["ci_pct"], full_mean) if q["status"] == "converged" else None
        q["time_saved_pct"] = (
            100 * (1 - q["elapsed_s"] / statistics.mean(full_elapsed)) if full_elapsed and q.get("elapsed_s") else None
        )
        q["traffic_saved_pct"] = (
            100 * (1 - q["bytes_sent"] / statistics.mean(full_bytes)) if full_bytes and q.get("bytes_sent") else None
        )
    for v in vs:
        if "error" in v:
            continue
        v["time_saved_pct"] = (
            100 * (1 - v["quick_elapsed_s"] / v["elapsed_s"])
            if v.get("quick_elapsed_s") and v.get("elapsed_s")
            else None
        )
        v["traffic_saved_pct"] = (
            100 * (1 - v["quick_bytes_sent"] / v["bytes_sent"])
            if v.get("quick_bytes_sent") and v.get("bytes_sent")
            else None
        )
    runs = vs + qs
    ok = [r for r in runs if "error" not in r]
    path = row.path
    lab = m["lab"]["fwd"]
    s = {
        "id": row.id,
        "cc": row.cc,
        "streams": row.streams,
        "rate_mbps": path.rate_mbps,
        "rtt_ms": path.rtt_ms,
        "queue_bytes": path.queue_bytes,
        "queue_bdp": round(path.queue_bytes / max(1, path.bdp_bytes), 2),
        "loss": path.loss,
        "jitter": f"{path.jitter_dist} {path.jitter_ms:g} ms" if path.jitter_ms else "",
        "cross": (f"{path.cross_mbps:g}M {path.cross_on_ms:g}/{path.cross_off_ms:g} ms" if path.cross_mbps else ""),
        "bdp_bytes": path.bdp_bytes,
        "full_mbps": full_mean,
        # Every 20 s run of the row: the validate runs and the separate quick runs that fell
        # back (they ran the whole 20 s, and their figure is that run's). Three runs alone
        # make a noisy yardstick where the 20 s figure itself is heavy-tailed (random loss:
        # 30-68 Mbit/s on one row), and a row whose quick runs all fell back would otherwise
        # compare six 20 s runs with three of the same.
        "full_cv_pct": cv_pct(fulls + [q["figure_mbps"] for q in qs if q.get("status") == "fallback"]),
        # Every quick estimate of the row, paired and separate: each is its own connection.
        "quick_cv_pct": cv_pct([r["figure_mbps"] for r in ok]),
        "converged": sum(r["status"] == "converged" for r in ok),
        "estimates": len(ok),
        "fallbacks": sum(r["status"] == "fallback" for r in ok),
        "errors": ";".join(f"{r['kind']}:{r['error']}" for r in runs if "error" in r),
        "prober_build": m["build"],
        "drops_queue": lab["drop_queue_packets"],
        "drops_loss": lab["drop_loss_packets"],
        "cross_drops": lab.get("cross_drop_packets"),
        "extra_delay_mean_ms": (lab.get("extra_delay_mean_us") or 0) / 1e3,
        "extra_delay_sd_ms": (lab.get("extra_delay_sd_us") or 0) / 1e3,
        "delayline_late_max_ms": lab["late_max_us"] / 1e3,
    }
    # One validate run a row (the large matrix's --runs 1) measures no run-to-run spread: the
    # figures above would compare a quick spread of two with a 20 s spread of one or two.
    if len(vs) < 2:
        s["quick_cv_pct"] = s["full_cv_pct"] = None
    s["spread_ratio"] = (
        s["quick_cv_pct"] / s["full_cv_pct"] if s["quick_cv_pct"] is not None and s["full_cv_pct"] else None
    )
    for kind in ("validate", "quick"):
        errs = [abs(r["error_pct"]) for r in ok if r["kind"] == kind and r.get("error_pct") is not None]
        s[f"{kind}_max_abs_err"] = max(errs) if errs else None
    for key in ("time_saved_pct", "traffic_saved_pct"):
        xs = [q[key] for q in qs if q.get(key) is not None]
        s[key] = statistics.median(xs) if xs else None
    conv_q = [q["time_saved_pct"] for q in qs if q.get("status") != "fallback" and q.get("time_saved_pct") is not None]
    s["min_time_saved_not_fallback"] = min(conv_q) if conv_q else None
    afters = [v["full_after_ss_mbps"] for v in vs if v.get("full_after_ss_mbps")]
    s["full_after_ss_mbps"] = statistics.mean(afters) if afters else None
    mss = next((r["mss"] for r in ok if r.get("mss")), None) or path.mtu - 52
    s["ss_paper_s"] = paper_ss_s(row, mss)
    flat = [{"row": row.id, "cc": row.cc, "run": i, **r} for i, r in enumerate(vs)]
    flat += [{"row": row.id, "cc": row.cc, "run": i, **r} for i, r in enumerate(qs)]
    return s, flat


# ---------------------------------------------------------------- summary


def fmt(x, nd=1):
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _rms(xs):
    xs = [x for x in xs if x is not None]
    return math.sqrt(sum(x * x for x in xs) / len(xs)) if xs else None


def cc_summary(rows: list[dict], runs: list[dict], cc: str) -> dict | None:
    """Per-cc figures over the whole matrix (the issue's targets are per cc)."""
    rr = [r for r in rows if r["cc"] == cc]
    ok = [r for r in runs if r["cc"] == cc and "error" not in r]
    if not ok:
        return None
    out = {"cc": cc, "rows": len(rr)}
    for kind in ("validate", "quick"):
        errs = [abs(r["error_pct"]) for r in ok if r["kind"] == kind and r.get("error_pct") is not None]
        out[kind] = {
            "n": len(errs),
            "median": statistics.median(errs) if errs else None,
            "p90": percentile(errs, 90),
            "p95": percentile(errs, 95),
        }
    # Pooled spread: root-mean-square over the rows of each row's spread.
    out["quick_cv"] = _rms([r["quick_cv_pct"] for r in rr])
    out["full_cv"] = _rms([r["full_cv_pct"] for r in rr])
    out["spread_ratio"] = out["quick_cv"] / out["full_cv"] if out["quick_cv"] is not None and out["full_cv"] else None
    ratios = [r["spread_ratio"] for r in rr if r["spread_ratio"] is not None]
    out["rows_spread_ok"] = sum(x <= TARGETS["spread_ratio"] for x in ratios)
    out["rows_spread_n"] = len(ratios)
    out["converged"] = sum(r["status"] == "converged" for r in ok)
    out["nociq"] = sum(r["status"] == "nociq" for r in ok)
    out["estimates"] = len(ok)
    cov = [r["covered"] for r in ok if r.get("covered") is not None]
    cov_p = [r["covered"] for r in ok if r.get("covered") is not None and r["kind"] == "validate"]
    out["coverage"] = 100.0 * sum(cov) / len(cov) if cov else None
    out["coverage_paired"] = 100.0 * sum(cov_p) / len(cov_p) if cov_p else None
    out["coverage_n"] = len(cov)
    big = [r for r in rr if r["bdp_bytes"] >= BIG_BDP]
    for key in ("time_saved_pct", "traffic_saved_pct"):
        xs = [r[key] for r in big if r[key] is not None]
        out[key] = statistics.median(xs) if xs else None
    return out


def verdict_cc(c: dict) -> dict:
    v = c["validate"]
    return {
        "error": v["median"] is not None
        and v["median"] <= TARGETS["median_abs_err"]
        and v["p95"] <= TARGETS["p95_abs_err"],
        "spread": None if c["spread_ratio"] is None else c["spread_ratio"] <= TARGETS["spread_ratio"],
        "coverage": None if c["coverage"] is None else c["coverage"] >= TARGETS["coverage"],
    }


def savings(rows: list[dict]) -> dict:
    big = [r for r in rows if r["bdp_bytes"] >= BIG_BDP and r["time_saved_pct"] is not None]
    out = {"n": len(big)}
    for key in ("time_saved_pct", "traffic_saved_pct"):
        xs = [r[key] for r in big if r[key] is not None]
        out[key] = (statistics.median(xs), min(xs)) if xs else (None, None)
    low = [
        r
        for r in rows
        if r["min_time_saved_not_fallback"] is not None
        and r["min_time_saved_not_fallback"] < TARGETS["row_time_saved_min"]
    ]
    out["below_70"] = [r["id"] for r in low]
    return out


def _mark(ok: bool | None, na: str = "no error bars") -> str:
    return f"n/a ({na})" if ok is None else "met" if ok else "**MISSED**"


def summary_lines(rows: list[dict], runs: list[dict]) -> tuple[list[str], dict]:
    lines, verdict = [], {}
    lines += [
        (
            "| cc | rows | paired median / p90 / p95 \\|err\\| % | separate median / p90 / p95 \\|err\\| % "
            "| spread quick / 20 s % (ratio) | rows spread <= 1.5x | converged | coverage % (paired) "
            "| time / traffic saved % (BDP >= 1 MB) | target |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cc in CCS:
        c = cc_summary(rows, runs, cc)
        if c is None:
            continue
        ok = verdict_cc(c)
        verdict[cc] = ok
        v, q = c["validate"], c["quick"]
        conv = f"{c['converged']}/{c['estimates']}" + (f" ({c['nociq']} no CI)" if c["nociq"] else "")
        lines.append(
            f"| {cc} | {c['rows']} | {fmt(v['median'])} / {fmt(v['p90'])} / {fmt(v['p95'])} "
            f"| {fmt(q['median'])} / {fmt(q['p90'])} / {fmt(q['p95'])} "
            f"| {fmt(c['quick_cv'])} / {fmt(c['full_cv'])} ({fmt(c['spread_ratio'], 2)}) "
            f"| {c['rows_spread_ok']}/{c['rows_spread_n']} | {conv} "
            f"| {fmt(c['coverage'])} ({fmt(c['coverage_paired'])}) of {c['coverage_n']} "
            f"| {fmt(c['time_saved_pct'])} / {fmt(c['traffic_saved_pct'])} "
            f"| error {_mark(ok['error'])}, spread {_mark(ok['spread'], 'no row with two runs')}, "
            f"coverage {_mark(ok['coverage'])} |"
        )
    sv = savings(rows)
    tm, tmin = sv["time_saved_pct"]
    bm, bmin = sv["traffic_saved_pct"]
    verdict["time_saved"] = tm is not None and tm >= TARGETS["time_saved"]
    verdict["traffic_saved"] = bm is not None and bm >= TARGETS["traffic_saved"]
    verdict["no_row_below_70"] = not sv["below_70"]
    lines += [
        "",
        (f"Rows with BDP >= 1 MB ({sv['n']}), separate quick runs (row median, then median over rows):"),
        "",
        "| measure | median | min row | target |",
        "|---|---|---|---|",
        f"| time saved % | {fmt(tm)} | {fmt(tmin)} | >= 85: {_mark(verdict['time_saved'])} |",
        f"| traffic saved % | {fmt(bm)} | {fmt(bmin)} | >= 85: {_mark(verdict['traffic_saved'])} |",
        "",
        "Quick runs that did not fall back and saved < 70 % of the time (any row): "
        + (", ".join(sv["below_70"]) if sv["below_70"] else "none")
        + ".",
    ]
    return lines, verdict


# ---------------------------------------------------------------- report


ROW_COLUMNS = [
    ("id", "row"),
    ("queue_bdp", "queue x BDP"),
    ("loss", "loss"),
    ("jitter", "jitter"),
    ("cross", "cross"),
    ("full_mbps", "20 s Mb/s"),
    ("full_after_ss_mbps", "20 s after ss"),
    ("validate_max_abs_err", "paired max \\|err\\| %"),
    ("quick_max_abs_err", "separate max \\|err\\| %"),
    ("quick_cv_pct", "quick spread %"),
    ("full_cv_pct", "20 s spread %"),
    ("spread_ratio", "ratio"),
    ("converged", "converged"),
    ("time_saved_pct", "time saved %"),
    ("traffic_saved_pct", "traffic saved %"),
    ("drops_queue", "queue drops"),
    ("extra_delay_sd_ms", "applied jitter sd ms"),
]
RUN_COLUMNS = [
    "row",
    "cc",
    "kind",
    "run",
    "status",
    "figure_mbps",
    "estimate_mbps",
    "ci_pct",
    "window_s",
    "full_mbps",
    "error_pct",
    "covered",
    "held_by",
    "rule",
    "ss_end_s",
    "elapsed_s",
    "quick_elapsed_s",
    "bytes_sent",
    "quick_bytes_sent",
    "time_saved_pct",
    "traffic_saved_pct",
    "full_after_ss_mbps",
    "error",
]


def write_csv(runs: list[dict], rows: list[dict], out: Path) -> None:
    by_id = {r["id"]: r for r in rows}
    row_cols = [
        "rate_mbps",
        "rtt_ms",
        "queue_bytes",
        "queue_bdp",
        "loss",
        "jitter",
        "cross",
        "streams",
        "bdp_bytes",
        "prober_build",
    ]
    with open(out / "report-quick.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(RUN_COLUMNS + row_cols)
        for r in runs:
            w.writerow(
                [fmt(r.get(k), 3) if r.get(k) is not None else "" for k in RUN_COLUMNS]
                + [by_id[r["row"]][k] for k in row_cols]
            )


def write_report(rows: list[dict], runs: list[dict], meta: dict, out: Path) -> dict:
    write_csv(runs, rows, out)
    lines = [
        "# Quick mode vs a 20 s test over emulated paths",
        "",
        (
            f"Generated by `{meta['command']}` on {meta['date']} in {meta['wall_s'] / 60:.1f} min "
            f"({len(rows)} rows, {meta['runs']} validate + {meta['runs']} quick runs each; kernel "
            f"{meta['kernel']}; full runs of {meta['seconds']} s). Each row had its own freshly "
            "created lab (prober/lab: userspace delay line between two network namespaces, MTU "
            "9000, 1500 on dial-up) and a real `iperf3 -s` (or `iperf -s`)."
        ),
        "",
        ("- **paired**: a `validate` run: the quick estimate and the 20 s result of the same connection."),
        "- **separate**: a separate `quick` run's figure vs the mean of the row's 20 s runs.",
        (
            "- A quick estimate that did not converge counts with the full run it fell back to "
            "(paired: error 0, nothing saved)."
        ),
        (
            "- **spread**: run-to-run std-dev in % of the mean, of the row's quick figures (paired and "
            "separate: each its own connection) and of its 20 s runs (the validate runs and the "
            "separate quick runs that fell back to a whole 20 s run); per cc the root-mean-square "
            "over its rows, and their ratio (target <= 1.5)."
        ),
        (
            "- **coverage**: converged estimates whose 20 s rate (paired: the same connection's; "
            "separate: the row's mean) lies inside `quick_bps` +/- `quick_ci_pct`."
        ),
        (
            "- **time / traffic saved**: 1 - a separate quick run's elapsed time (bytes sent) / the "
            "row's 20 s runs'; row median."
        ),
        (
            "- **20 s after ss**: the 20 s runs' own rate from their slow-start end to their end: the "
            "steady state that the 20 s figure dilutes with slow-start."
        ),
        "",
        "## Summary",
        "",
    ]
    builds = sorted({r["prober_build"] for r in rows})
    lines += [
        "quickprobe build (sha256 of prober/build/quickprobe, first 12 hex): "
        + ", ".join(builds)
        + (
            " -- MIXED: the prober was rebuilt during this run; the rows' builds are in the CSV."
            if len(builds) > 1
            else ""
        ),
        "",
    ]
    summ, verdict = summary_lines(rows, runs)
    lines += summ + [
        "",
        "## Per row",
        "",
        "| " + " | ".join(h for _, h in ROW_COLUMNS) + " |",
        "|" + "---|" * len(ROW_COLUMNS),
    ]
    for r in rows:
        cells = [
            f"{r['converged']}/{r['estimates']}"
            if k == "converged"
            else f"{r[k]:g}"
            if k == "loss"
            else fmt(r[k], 2 if k in ("spread_ratio", "extra_delay_sd_ms", "queue_bdp") else 1)
            for k, _ in ROW_COLUMNS
        ]
        lines.append("| " + " | ".join(cells) + " |")
    errs = [r for r in rows if r["errors"]]
    if errs:
        lines += ["", "Prober errors: " + "; ".join(f"{r['id']}: {r['errors']}" for r in errs)]
    lines += ["", "## Where quick mode missed", ""]
    lines += meta.get("misses") or ["No run had |error| > 10 % and every quick estimate converged."]
    lines += [
        "",
        "## Figures",
        "",
        (
            "- `fig7-quick-vs-20s.png`: every quick figure vs its 20 s reference, with the "
            "estimate's +/- `quick_ci_pct` and the 20 s runs' min-max (the paper's Figure 7)."
        ),
        *[
            f"- `{p}`: cwnd, InstBW and CumuBW vs time of a `validate` run (the paper's Figures 8-10)."
            for p in meta.get("trace_pngs", [])
        ],
        "",
    ]
    (out / "report-quick.md").write_text("\n".join(lines))
    return verdict


# ---------------------------------------------------------------- misses


def series_excerpt(events: list[dict], t0: float | None, t1: float | None, max_lines: int = 30) -> list[str]:
    """The sample series a detector sees from 0.5 s before t0 to 0.5 s after t1 (slow-start
    end and the quick window's end), at most max_lines lines, evenly spaced."""
    samples = [e for e in events if e["event"] == "sample" and e.get("streams")]
    if not samples:
        return ["(no samples)"]
    t0 = samples[-1]["t"] if t0 is None else t0
    t1 = max(t0, t1 or t0)
    span = [s for s in samples if t0 - 0.5 <= s["t"] <= t1 + 0.5] or samples[-max_lines:]
    step = max(1, math.ceil(len(span) / max_lines))
    lines = ["t_s    cwnd_KB  ssthresh_KB  rtt_ms  deliv_Mbps  inst_Mbps  in_ss  retrans"]
    for s in span[::step]:
        st = s["streams"][0]
        lines.append(
            f"{s['t']:5.2f}  {st['cwnd_bytes'] / 1e3:8.0f}  "
            f"{(st.get('ssthresh_bytes') or 0) / 1e3:11.0f}  {st['rtt_us'] / 1e3:6.1f}  "
            f"{(st.get('delivery_rate_bps') or 0) / 1e6:10.1f}  {s['inst_bps'] / 1e6:9.1f}  "
            f"{str(st.get('in_slow_start'))[0]:>5}  {s['retransmits']:7d}"
        )
    return lines


def describe_misses(measured: list[dict], rows: list[dict], runs: list[dict]) -> list[str]:
    """For every row with a run off by > 10 % or not converged: the worst run and its series."""
    out = []
    for m, r in zip(measured, rows):
        mine = [x for x in runs if x["row"] == r["id"] and "error" not in x]
        bad = [
            x
            for x in mine
            if (x.get("error_pct") is not None and abs(x["error_pct"]) > MISS_ERR_PCT) or x["status"] == "fallback"
        ]
        if not bad:
            continue
        worst = max(bad, key=lambda x: abs(x.get("error_pct") or 0) if x["status"] != "fallback" else -1)
        row: Row = m["row"]
        events = m[worst["kind"]][worst["run"]]
        nfb = sum(x["status"] == "fallback" for x in mine)
        held = collections.Counter(x.get("held_by") or "not entered" for x in mine if x["status"] == "fallback")
        held_s = " (held open by: " + ", ".join(f"{k} {v}" for k, v in held.most_common()) + ")" if held else ""
        off = [x for x in mine if x.get("error_pct") is not None and abs(x["error_pct"]) > MISS_ERR_PCT]
        out += [
            f"### {row.id}: {len(off)} of {len(mine)} estimates off by > 10 %, {nfb} fell back{held_s}",
            "",
            f"Path {row.path.description}; queue drops {r['drops_queue']}, random drops "
            f"{r['drops_loss']}. 20 s runs {fmt(r['full_mbps'])} Mbit/s (after their slow-start "
            f"{fmt(r['full_after_ss_mbps'])}). Errors of the row's estimates (paired, then "
            "separate): "
            + ", ".join(f"{fmt(x.get('error_pct'))}{'*' if x['status'] == 'fallback' else ''}" for x in mine)
            + " % (* fell back).",
            "",
            (
                f"Worst: {worst['kind']} run {worst['run']}: estimate {fmt(worst.get('estimate_mbps'))} "
                f"+/- {fmt(worst.get('ci_pct'))} % over {fmt(worst.get('window_s'), 2)} s, "
                f"{worst['status']}{' (held open by: ' + worst['held_by'] + ')' if worst.get('held_by') else ''}, "
                f"rule {worst.get('rule')} at {fmt(worst.get('ss_end_s'), 2)} s. "
                "Series (stream 1) from 0.5 s before slow-start end to 0.5 s after the window:"
            ),
            "",
            "```",
            *series_excerpt(
                events, worst.get("ss_end_s"), (worst.get("ss_end_s") or 0) + (worst.get("window_s") or 1.0)
            ),
            "```",
            "",
        ]
    return out


# ---------------------------------------------------------------- figures


def plot_fig7(rows: list[dict], runs: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 6.0))
    colours = {"reno": "tab:blue", "cubic": "tab:orange", "bbr": "tab:green"}
    by_id = {r["id"]: r for r in rows}
    vals = []
    for r in runs:
        if "error" in r or not r.get("figure_mbps"):
            continue
        row = by_id[r["row"]]
        x = r["full_mbps"] if r["kind"] == "validate" else row["full_mbps"]
        if not x:
            continue
        y = r["figure_mbps"]
        fulls = [v["full_mbps"] for v in runs if v["row"] == r["row"] and v.get("full_mbps")]
        xerr = [[x - min(fulls)], [max(fulls) - x]] if r["kind"] == "quick" and fulls else None
        yerr = y * r["ci_pct"] / 100 if r["status"] == "converged" and r.get("ci_pct") else None
        c = colours.get(r["cc"], "k")
        ax.errorbar(
            x,
            y,
            xerr=xerr,
            yerr=yerr,
            fmt="o" if r["kind"] == "validate" else "s",
            ms=4,
            color=c,
            mfc=c if r["status"] != "fallback" else "none",
            elinewidth=0.7,
            capsize=2,
            alpha=0.8,
        )
        vals += [x, y]
    lo = min([1.0] + vals) * 0.7
    hi = max([10.0] + vals) * 1.4
    xs = [lo, hi]
    ax.plot(xs, xs, "k-", lw=0.8, label="quick = 20 s")
    ax.plot(xs, [x * 1.1 for x in xs], "k:", lw=0.8, label="+/- 10 %")
    ax.plot(xs, [x * 0.9 for x in xs], "k:", lw=0.8)
    for cc, c in colours.items():
        ax.scatter([], [], c=c, label=cc)
    ax.scatter([], [], marker="o", c="grey", label="paired (validate)")
    ax.scatter([], [], marker="s", c="grey", label="separate quick run")
    ax.scatter([], [], marker="o", facecolors="none", edgecolors="grey", label="fell back (full run)")
    ax.set(
        xscale="log",
        yscale="log",
        xlim=xs,
        ylim=xs,
        xlabel="20 s measurement (Mbit/s)",
        ylabel="quick mode (Mbit/s), bar: +/- quick_ci_pct",
        title="Quick mode vs 20 s (emulated paths)",
    )
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "fig7-quick-vs-20s.png", dpi=110)
    plt.close(fig)


def plot_trace(m: dict, out: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ev = m["validate"][0]
    samples = [e for e in ev if e["event"] == "sample"]
    t = [s["t"] for s in samples]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ax.plot(t, [s["inst_bps"] / 1e6 for s in samples], lw=0.9, label="InstBW")
    ax.plot(t, [s["cumu_bps"] / 1e6 for s in samples], lw=0.9, label="CumuBW")
    ax.set(xlabel="time (s)", ylabel="Mbit/s")
    ax2 = ax.twinx()
    ax2.plot(t, [s["cwnd_bytes"] / 1e6 for s in samples], "g-", lw=0.7, label="cwnd (sum)")
    ax2.set_ylabel("cwnd (MB)")
    res = final(ev)
    vv = res.get("validate") if res.get("event") == "result" else None
    if vv and vv.get("slow_start_end_s") is not None:
        e = vv["slow_start_end_s"]
        end = vv.get("quick_elapsed_s") or e + 1.0
        ax.axvline(e, color="r", ls="--", lw=0.8)
        ax.axvspan(e, end, color="r", alpha=0.08)
        label = f" slow-start end ({vv['rule']}); quick window"
        if vv.get("quick_ci_pct") is not None:
            label += f": {vv['quick_bps'] / 1e6:.1f} Mbit/s +/- {vv['quick_ci_pct']:.1f} %"
        ax.text(e, ax.get_ylim()[1] * 0.95, label, fontsize=7, color="r")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="lower right", fontsize=8)
    row: Row = m["row"]
    ax.set_title(f"Throughput and cwnd: {row.id}", fontsize=9)
    fig.tight_layout()
    name = f"fig-trace-{row.id}.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def pick_trace_rows(measured: list[dict]) -> list[dict]:
    """One row per cc: the jitter, the 2 x BDP and the cross-traffic rows when present."""
    picked = []
    for want in ("-jn2-cubic", "q2-bbr", "-x0.3-reno"):
        for m in measured:
            if want in m["row"].id and final(m["validate"][0]).get("event") == "result":
                picked.append(m)
                break
    return picked or [m for m in measured[:3] if m["validate"]]


# ---------------------------------------------------------------- main


def select(matrix: list[Row], only: str | None) -> list[Row]:
    if not only:
        return matrix
    ids = set(only.split(","))
    unknown = ids - {r.id for r in matrix}
    if unknown:
        raise SystemExit(f"bench_quick: unknown row ids {sorted(unknown)}; see --list")
    return [r for r in matrix if r.id in ids]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="the large matrix (147 rows, about 3 h 45 min)")
    ap.add_argument("--only", help="comma-separated row ids (see --list)")
    ap.add_argument("--list", action="store_true", help="list the matrix rows and exit")
    ap.add_argument("--seconds", type=int, default=20, help="length of the full runs (default 20)")
    ap.add_argument("--runs", type=int, default=3, help="validate and quick runs per row (default 3)")
    ap.add_argument(
        "--out", type=Path, help=f"where the report goes (default {BENCH_DIR}, with --full {FULL_BENCH_DIR})"
    )
    ap.add_argument(
        "--runs-dir",
        type=Path,
        help=f"where the raw JSON Lines of every run go (default {RUNS_DIR}, with --full {FULL_RUNS_DIR})",
    )
    ap.add_argument(
        "--prober", type=Path, default=QUICKPROBE, help=f"the quickprobe binary to measure (default {QUICKPROBE})"
    )
    ap.add_argument(
        "--reuse", action="store_true", help="rebuild the report from the runs kept in --runs-dir (no traffic)"
    )
    a = ap.parse_args(argv)
    if not 1 <= a.runs <= 20:
        raise SystemExit(f"bench_quick: --runs {a.runs}: allowed 1-20")
    matrix = select(full_matrix() if a.full else default_matrix(), a.only)
    a.out = a.out or (FULL_BENCH_DIR if a.full else BENCH_DIR)
    a.runs_dir = a.runs_dir or (FULL_RUNS_DIR if a.full else RUNS_DIR)
    if a.list:
        for r in matrix:
            print(f"{r.id:36s} BDP {r.path.bdp_bytes / 1e6:6.2f} MB  {r.path.description}")
        return 0
    reason = None if a.reuse else labctl.lab_unavailable_reason()
    if reason:
        raise SystemExit(f"bench_quick: {reason}")
    global PROBER
    PROBER = a.prober.resolve()
    if not a.reuse and not PROBER.exists():
        raise SystemExit(f"bench_quick: {PROBER} is not built: run `make prober`")
    a.runs_dir.mkdir(parents=True, exist_ok=True)
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    measured, rows, runs = [], [], []
    for i, row in enumerate(matrix, 1):
        m = load_row(row, a.runs, a.runs_dir) if a.reuse else measure_row(row, a.seconds, a.runs, a.runs_dir)
        s, flat = summarise_row(m)
        measured.append(m)
        rows.append(s)
        runs += flat
        print(
            f"[{i}/{len(matrix)} {time.monotonic() - t0:5.0f}s] {row.id:34s} 20 s "
            f"{fmt(s['full_mbps']):>7} Mbit/s  max |err| paired {fmt(s['validate_max_abs_err']):>5} % "
            f"separate {fmt(s['quick_max_abs_err']):>5} %  converged {s['converged']}/{s['estimates']}  "
            f"spread {fmt(s['quick_cv_pct'])}/{fmt(s['full_cv_pct'])} %  time saved "
            f"{fmt(s['time_saved_pct'])} %  {s['errors']}",
            flush=True,
        )
    meta = {
        "command": "make bench-quick"
        + (" FULL=1" if a.full else "")
        + (f" (--only {a.only})" if a.only else "")
        + (f" (--seconds {a.seconds})" if a.seconds != 20 else "")
        + (f" (--runs {a.runs})" if a.runs != 3 else "")
        + (f" (--prober {a.prober})" if PROBER != QUICKPROBE else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_s": time.monotonic() - t0,
        "kernel": os.uname().release,
        "seconds": a.seconds,
        "runs": a.runs,
    }
    # A rebuilt report keeps the measuring run's command, date and duration.
    meta_file = a.runs_dir / "meta.json"
    if a.reuse and meta_file.exists():
        meta.update(json.loads(meta_file.read_text()))
        meta["command"] += " (report rebuilt with --reuse)"
    elif not a.reuse:
        meta_file.write_text(json.dumps(meta))
    misses = describe_misses(measured, rows, runs)
    meta.update(misses=misses, trace_pngs=[plot_trace(m, a.out) for m in pick_trace_rows(measured)])
    plot_fig7(rows, runs, a.out)
    verdict = write_report(rows, runs, meta, a.out)
    # Only real measuring runs (20 s, not rebuilt from kept runs) go to the detector notes.
    if misses and not a.reuse and a.seconds == 20:
        NOTES.parent.mkdir(exist_ok=True)
        with open(NOTES, "a") as fh:
            fh.write(f"\n## path-lab: bench-quick misses, {meta['date']} ({meta['command']})\n\n")
            fh.write("\n".join(misses) + "\n")
    print(f"\nwrote {a.out / 'report-quick.md'} and .csv in {meta['wall_s'] / 60:.1f} min; targets: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
