#!/usr/bin/env python3
"""How close is quick mode to a 20 s test? Measured over emulated WAN paths (the path lab).

    make bench-quick            # default matrix: 16 rows, about 21 min
    make bench-quick FULL=1     # the large matrix: 147 rows, about 3 h 10 min (3 runs a row)
    make bench-quick FULL=1 RUNS=1   # the same rows once each: about 64 min
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

Quick mode answers by a deadline on every run (issue 24): the report counts every run, per
congestion control. A run that did not answer (`quick_answered` false: it fell back to the
full run, asked for with --until-converged, or never entered quick mode) is a miss for
coverage and the deadline, and saves 0 %; nothing counts as exact. Run files from a prober
before issue 24 still load: `quick_answered` is read as `quick_converged` and the interval
as `quick_bps` +/- `quick_ci_pct`.
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
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
# Every run of the last measuring bench, gzipped beside its report, so that an estimator change
# can be judged by replaying them (prober/build/qwreplay, replay_corpus.py summarise) before
# and after, and the tests replay them (tests/prober/test_kept_runs.py).
KEPT = "runs"
# The sources that decide what a recorded run's quick answer is: a kept run's answer is
# reproducible by replay exactly while their fingerprint is the one it was recorded with.
ESTIMATOR_SOURCES = [
    "prober/src/quickwin.c",
    "prober/src/quickwin.h",
    "prober/src/qwint.h",
    "prober/src/qwdue.c",
    "prober/src/qwseen.c",
    "prober/src/qwundo.c",
    "prober/src/qwstats.c",
    "prober/src/qwloss.c",
    "prober/src/qwpredict.c",
    "prober/src/qwbound.c",
    "prober/src/qwfloor.c",
    "prober/src/qwbbr.c",
    "prober/src/qwlevel.c",
    "prober/src/qwshare.c",
    "prober/src/qwspread.c",
    "prober/src/qwnames.c",
    "prober/src/opts.h",
]
# The sources that decide where a recorded run's slow-start ends: `qwreplay -S` finds the
# recorded end again exactly while their fingerprint is the one the runs were recorded with.
DETECTOR_SOURCES = [
    "prober/src/slowstart.c",
    "prober/src/slowstart.h",
]
FULL_RUNS_DIR = ROOT / "test-artifacts" / "bench-quick-full"
NOTES = ROOT / ".coord" / "detector-notes.md"
CCS = ("reno", "cubic", "bbr")
# Per cc over every run of the matrix: issue 24's targets, and issue 7's that still apply
# (paired median error, spread).
TARGETS = {
    "on_time": 95.0,  # % of runs answered by the deadline (answer_deadline_s)
    "deadline_short_s": 5.0,  # RTT <= 100 ms: within 5 s of the first byte
    "deadline_rtt_ms": 100.0,
    "deadline_after_ss_s": 4.0,  # longer RTTs: within slow-start end + 4 s
    "time_saved_big": 85.0,  # median over the runs on rows with BDP >= 1 MB
    "time_saved_all": 80.0,  # median over all runs
    "halfwidth_median": 5.0,
    "halfwidth_p90": 15.0,
    "coverage": 90.0,  # paired: the same connection's 20 s figure inside the interval
    "median_abs_err": 3.0,  # paired, issue 7
    "p95_abs_err": 10.0,  # paired
    "spread_ratio": 1.5,  # issue 7
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


def _custom(rate, rtt, queue_bdp=1.0, *, loss=0.0, jitter=None, cross=None, mtu=9000) -> labctl.PathSpec:
    """A path from the design: the queue a multiple of the BDP (at least 3 jumbo packets),
    jitter = (dist, ms), cross = (share of the rate, on ms, off ms), mtu the lab's (9000
    unless the row says 1500, the internet's frame: the name ends in -m1500)."""
    bdp = rate * 1e6 / 8 * rtt / 1e3
    name = f"r{rate:g}-{rtt:g}ms-q{queue_bdp:g}"
    desc = f"{rate:g} Mbit/s, {rtt:g} ms, queue {queue_bdp:g} x BDP"
    kw = {"mtu": mtu}
    if mtu != 9000:
        name += f"-m{mtu}"
        desc += f", MTU {mtu}"
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
    """16 rows chosen by hand as a fractional design (a full cross of the factors is ~150
    rows): every cc gets a 0.25, a 0.5 and a 2 x BDP buffer, a 4- and an 8-stream row, a
    jitter row and a cross-traffic row; loss 1e-4 and 1e-3 fall on different ccs; rates
    (1-400 Mbit/s) and RTTs (10-200 ms) are spread so that no two rows of a cc share a level
    and six rows have BDP >= 1 MB (the time-saved target's rows). The old dial-up (reno) and
    lossy (cubic) rows stay; BBR's tiny path is 10 Mbit/s x 150 ms with 4 streams.
    150 Mbit/s x 70 ms and 200 Mbit/s x 20 ms x 2 BDP are the paths issue 7 reports on. Each
    row: 3 validate runs of 20 s and 3 quick runs, 75 s when quick mode converges at once and
    up to 130 s when every quick run falls back (a 14th row, BBR on dial-up, did not fit).
    Three rows at 1500-byte frames (one a cc) close the list."""
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
        # 1500-byte frames, as on the internet: at 8,300 packets a second (100 Mbit/s) the
        # delay line still delivers 99 % of the payload rate (95.5 of 96.5 Mbit/s with CUBIC);
        # Reno's and CUBIC's cycles are 6 and 1.8 x longer in packets than at 9000 bytes
        Row(_custom(100, 40, 1.0, mtu=1500), "cubic"),
        Row(_custom(20, 60, 1.0, mtu=1500), "reno"),
        Row(_custom(100, 40, 0.5, mtu=1500), "bbr"),
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


def fingerprint(sources) -> str:
    """Short hash of the named sources."""
    h = hashlib.sha256()
    for name in sources:
        h.update((ROOT / name).read_bytes())
    return h.hexdigest()[:12]


def estimator_fingerprint() -> str:
    """Short hash of the sources that decide a quick answer (ESTIMATOR_SOURCES)."""
    return fingerprint(ESTIMATOR_SOURCES)


def detector_fingerprint() -> str:
    """Short hash of the slow-start detector's sources (DETECTOR_SOURCES)."""
    return fingerprint(DETECTOR_SOURCES)


def keep_runs(runs_dir: Path, kept: Path, meta: dict) -> int:
    """Gzip every run's JSON Lines from runs_dir into kept (replacing what was there), with a
    MANIFEST.json of the bench's meta and the estimator's fingerprint; returns the count."""
    kept.mkdir(parents=True, exist_ok=True)
    for old in kept.glob("*.jsonl.gz"):
        old.unlink()
    files = sorted(runs_dir.glob("*.jsonl"))
    for f in files:
        # mtime 0: the same run gzips to the same bytes
        with open(f, "rb") as src, gzip.GzipFile(kept / (f.name + ".gz"), "wb", mtime=0) as dst:
            dst.write(src.read())
    manifest = {**meta, "estimator": estimator_fingerprint(), "detector": detector_fingerprint(), "runs": len(files)}
    (kept / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return len(files)


def read_run(f: Path) -> str:
    """A run's JSON Lines, from f or from the gzipped copy kept beside the report."""
    if f.exists():
        return f.read_text()
    gz = f.with_name(f.name + ".gz")
    if gz.exists():
        return gzip.decompress(gz.read_bytes()).decode()
    raise SystemExit(f"bench_quick: --reuse: {f} (or {gz.name}) is missing; run without --reuse")


def load_row(row: Row, runs: int, runs_dir: Path) -> dict:
    """A row measured earlier (--reuse): its runs' JSON Lines and the delay line's counters."""
    out = {"row": row, "validate": [], "quick": []}
    for i in range(runs):
        for mode in ("validate", "quick"):
            out[mode].append(parse_events(read_run(run_file(runs_dir, row, mode, i))))
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


def is_answered(q: dict) -> bool:
    """Did quick mode answer (its estimate IS the result)? A prober before issue 24 has no
    `quick_answered`: read `quick_converged`; one older still (no `quick_converged` either)
    answered whenever it entered quick mode."""
    if q.get("quick_bps") is None:
        return False
    if q.get("quick_answered") is not None:
        return bool(q["quick_answered"])
    if "quick_converged" in q:
        return q["quick_converged"] is True
    return True


def interval_of(q: dict) -> tuple[float | None, float | None]:
    """The 95 % interval [lo, hi] of quick_bps: `quick_lo_bps` / `quick_hi_bps`, or from an
    older prober quick_bps -/+ quick_ci_pct; (None, None) when there is none."""
    est = q.get("quick_bps")
    if est is None:
        return None, None
    lo, hi = q.get("quick_lo_bps"), q.get("quick_hi_bps")
    if lo is not None and hi is not None:
        return lo, hi
    ci = q.get("quick_ci_pct")
    if ci is None:
        return None, None
    return est * (1 - ci / 100), est * (1 + ci / 100)


def halfwidth_pct(est, lo, hi) -> float | None:
    """The wider side of the interval in % of the estimate (what quick_ci_pct reports)."""
    if not est or lo is None or hi is None:
        return None
    return 100.0 * max(hi - est, est - lo) / est


def covers(lo, hi, truth) -> bool | None:
    """Is truth inside [lo, hi]? None without a truth; False without an interval (an answer
    with no interval claims nothing that can hold)."""
    if truth is None:
        return None
    if lo is None or hi is None:
        return False
    return lo <= truth <= hi


def answer_deadline_s(rtt_ms: float, ss_end_s: float | None) -> float | None:
    """When the answer is due, from the first byte (issue 24): 5 s on a path with RTT <= 100
    ms, else slow-start's end + 4 s (None when slow-start's end is unknown)."""
    if rtt_ms <= TARGETS["deadline_rtt_ms"]:
        return TARGETS["deadline_short_s"]
    return None if ss_end_s is None else ss_end_s + TARGETS["deadline_after_ss_s"]


def on_time(answered: bool, answer_s: float | None, deadline_s: float | None) -> bool:
    """Answered by its deadline; a run that did not answer is late whatever its length."""
    return bool(answered and answer_s is not None and deadline_s is not None and answer_s <= deadline_s)


def saved_pct(answered: bool, part, whole) -> float | None:
    """1 - part / whole in %; a run that did not answer saved nothing (0 %)."""
    if not answered:
        return 0.0
    if part is None or not whole:
        return None
    return 100.0 * (1 - part / whole)


def quick_outcome(q: dict | None, fallback_bps: float | None) -> dict:
    """What a quick estimate gave its user. q holds quick_bps, quick_answered,
    quick_converged, the interval, quick_bound_by ... (a quick run's result, or validate's
    object). status: converged; deadline (answered at its deadline without converging);
    nociq (answered, from a prober with no convergence test nor interval); fallback (did not
    answer: the full run's figure, fallback_bps, was the result). The estimate and interval
    of a run that did not answer are what it had when it gave up."""
    q = q or {}
    est = q.get("quick_bps")
    answered = is_answered(q)
    if not answered:
        status = "fallback"
    elif q.get("quick_converged") is True:
        status = "converged"
    elif "quick_converged" not in q and q.get("quick_answered") is None:
        status = "nociq"
    else:
        status = "deadline"
    lo, hi = interval_of(q)
    return {
        "status": status,
        "answered": answered,
        "figure_mbps": _mbps(est if answered else fallback_bps),
        "estimate_mbps": _mbps(est),
        "lo_mbps": _mbps(lo),
        "hi_mbps": _mbps(hi),
        "ci_pct": q.get("quick_ci_pct"),
        "halfwidth_pct": halfwidth_pct(est, lo, hi),
        "bound_by": q.get("quick_bound_by"),
        "bound_text": q.get("quick_bound_text"),
        "window_s": q.get("quick_window_s"),
        "rule": q.get("rule"),
        "ss_end_s": q.get("slow_start_end_s"),
        # what kept a window from converging (EVENTS.md: quick_held_by)
        "held_by": q.get("quick_held_by") if status != "converged" else None,
    }


def pct(a, b):
    return None if a is None or not b else 100.0 * (a - b) / b


def within_pct(r: dict, limit: float = 5.0) -> bool:
    """Answered, and its estimate within +/- limit % of its reference."""
    return bool(r.get("answered") and r.get("error_pct") is not None and abs(r["error_pct"]) <= limit)


def validate_run(events: list[dict]) -> dict:
    """One validate run: its 20 s figure and what quick mode said on the same connection."""
    v = final(events)
    if v.get("event") != "result":
        return {"kind": "validate", "error": v.get("code", "?")}
    full = v.get("full_bps") or v.get("cumulative_bps")
    vv = v.get("validate") or {}
    o = quick_outcome(vv, full)
    ans = o["answered"]
    # A run that did not answer gives its user the full run: its time and bytes.
    answer_s = vv.get("quick_elapsed_s") if ans else v.get("elapsed_s")
    answer_bytes = vv.get("quick_bytes_sent") if ans else v.get("bytes_sent")
    o.update(
        kind="validate",
        full_mbps=_mbps(full),
        error_pct=pct(o["estimate_mbps"], _mbps(full)),
        covered=covers(o["lo_mbps"], o["hi_mbps"], _mbps(full)) if ans else False,
        elapsed_s=v.get("elapsed_s"),
        bytes_sent=v.get("bytes_sent"),
        quick_elapsed_s=answer_s,
        quick_bytes_sent=answer_bytes,
        answer_s=answer_s,
        time_saved_pct=saved_pct(ans, answer_s, v.get("elapsed_s")),
        traffic_saved_pct=saved_pct(ans, answer_bytes, v.get("bytes_sent")),
        full_after_ss_mbps=rate_after_ss(events),
        mss=v.get("mss_bytes"),
    )
    o["within_5"] = within_pct(o)
    return o


def quick_run(events: list[dict]) -> dict:
    """One separate quick run: the estimate its user got, its time and traffic."""
    q = final(events)
    if q.get("event") != "result":
        return {"kind": "quick", "error": q.get("code", "?")}
    fallback = q.get("full_bps") or q.get("cumulative_bps")
    o = quick_outcome(q, fallback)
    o.update(
        kind="quick",
        elapsed_s=q.get("elapsed_s"),
        bytes_sent=q.get("bytes_sent"),
        answer_s=q.get("elapsed_s"),
        mss=q.get("mss_bytes"),
    )
    return o


# ---------------------------------------------------------------- one row


def cv_pct(xs):
    """Run-to-run spread: sample std-dev in % of the mean (None below two values)."""
    xs = [x for x in xs if x]
    if len(xs) < 2:
        return None
    return 100.0 * statistics.stdev(xs) / statistics.mean(xs)


def or_inf(x):
    """A run with no estimate (or no interval) counts as the worst: infinitely far / wide."""
    return math.inf if x is None else x


def abs_err(r: dict) -> float:
    return math.inf if r.get("error_pct") is None else abs(r["error_pct"])


def summarise_row(m: dict) -> tuple[dict, list[dict]]:
    """The row's figures and its runs (validate runs, then quick runs), each a flat dict."""
    row: Row = m["row"]
    vs = [validate_run(ev) for ev in m["validate"]]
    qs = [quick_run(ev) for ev in m["quick"]]
    fulls = [v["full_mbps"] for v in vs if v.get("full_mbps")]
    # The separate runs' yardstick: the median of the row's 20 s runs (the 20 s figure is
    # heavy-tailed under random loss: 30-68 Mbit/s on one row).
    full_ref = statistics.median(fulls) if fulls else None
    full_elapsed = [v["elapsed_s"] for v in vs if v.get("elapsed_s")]
    full_bytes = [v["bytes_sent"] for v in vs if v.get("bytes_sent")]
    for q in qs:
        if "error" in q:
            continue
        ans = q["answered"]
        q["error_pct"] = pct(q["estimate_mbps"], full_ref)
        q["covered"] = covers(q["lo_mbps"], q["hi_mbps"], full_ref) if ans else False
        q["within_5"] = within_pct(q)
        q["time_saved_pct"] = saved_pct(
            ans, q.get("elapsed_s"), statistics.mean(full_elapsed) if full_elapsed else None
        )
        q["traffic_saved_pct"] = saved_pct(
            ans, q.get("bytes_sent"), statistics.mean(full_bytes) if full_bytes else None
        )
    runs = vs + qs
    ok = [r for r in runs if "error" not in r]
    for r in ok:
        r["deadline_s"] = answer_deadline_s(row.path.rtt_ms, r.get("ss_end_s"))
        r["on_time"] = on_time(r["answered"], r.get("answer_s"), r["deadline_s"])
    path = row.path
    lab = m["lab"]["fwd"]
    paired = [v for v in vs if "error" not in v]
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
        "full_mbps": full_ref,
        # Every 20 s run of the row: the validate runs and the separate quick runs that fell
        # back (they ran the whole 20 s, and their figure is that run's). Three runs alone
        # make a noisy yardstick where the 20 s figure itself is heavy-tailed, and a row
        # whose quick runs all fell back would otherwise compare six 20 s runs with three.
        "full_cv_pct": cv_pct(fulls + [q["figure_mbps"] for q in qs if q.get("status") == "fallback"]),
        # Every quick figure of the row, paired and separate: each is its own connection.
        "quick_cv_pct": cv_pct([r["figure_mbps"] for r in ok]),
        "answered": sum(r["answered"] for r in ok),
        "converged": sum(r["status"] == "converged" for r in ok),
        "estimates": len(ok),
        "fallbacks": sum(r["status"] == "fallback" for r in ok),
        "on_time": sum(r["on_time"] for r in ok),
        "covered": sum(v["covered"] is True for v in paired),
        "paired": len(paired),
        "answer_s": statistics.median([or_inf(r.get("answer_s")) for r in ok]) if ok else None,
        "halfwidth_pct": statistics.median([or_inf(r["halfwidth_pct"]) for r in ok]) if ok else None,
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
        errs = [abs_err(r) for r in ok if r["kind"] == kind]
        s[f"{kind}_max_abs_err"] = max(errs) if errs else None
    for key in ("time_saved_pct", "traffic_saved_pct"):
        xs = [q[key] for q in qs if q.get(key) is not None]
        s[key] = statistics.median(xs) if xs else None
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
    """Linear interpolation between order statistics; an infinite value (a run with no
    estimate) stays infinite instead of making NaN."""
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    if xs[lo] == xs[hi]:
        return xs[lo]
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def share_pct(flags) -> float | None:
    """Share of true flags in %, None for none."""
    flags = list(flags)
    return 100.0 * sum(bool(f) for f in flags) / len(flags) if flags else None


def _rms(xs):
    xs = [x for x in xs if x is not None]
    return math.sqrt(sum(x * x for x in xs) / len(xs)) if xs else None


def cc_summary(rows: list[dict], runs: list[dict], cc: str) -> dict | None:
    """Per-cc figures over every run of the matrix (the targets are per cc)."""
    rr = [r for r in rows if r["cc"] == cc]
    mine = [r for r in runs if r["cc"] == cc]
    ok = [r for r in mine if "error" not in r]
    if not ok:
        return None
    big = {r["id"] for r in rr if r["bdp_bytes"] >= BIG_BDP}
    paired = [r for r in ok if r["kind"] == "validate"]
    separate = [r for r in ok if r["kind"] == "quick"]
    out = {"cc": cc, "rows": len(rr), "runs": len(ok), "errors": len(mine) - len(ok)}
    for status in ("converged", "deadline", "nociq", "fallback"):
        out[status] = sum(r["status"] == status for r in ok)
    out["answered"] = sum(r["answered"] for r in ok)
    answer_s = [or_inf(r.get("answer_s")) for r in ok]
    out["answer_s"] = {"median": median(answer_s), "p95": percentile(answer_s, 95)}
    out["on_time"] = share_pct(r["on_time"] for r in ok)
    for key in ("time_saved_pct", "traffic_saved_pct"):
        out[key] = median(r[key] for r in ok)
        out[key + "_big"] = median(r[key] for r in ok if r["row"] in big)
    out["runs_big"] = sum(r["row"] in big for r in ok)
    hw = [or_inf(r["halfwidth_pct"]) for r in ok]
    out["halfwidth"] = {"median": median(hw), "p90": percentile(hw, 90)}
    cov = [r["covered"] for r in paired if r["covered"] is not None]
    out["coverage"], out["coverage_n"] = share_pct(cov), len(cov)
    inside = [r["covered"] for r in separate if r["covered"] is not None]
    out["separate_inside"], out["separate_inside_n"] = share_pct(inside), len(inside)
    for kind, rs in (("validate", paired), ("quick", separate)):
        errs = [abs_err(r) for r in rs]
        out[kind] = {
            "n": len(errs),
            "median": median(errs),
            "p90": percentile(errs, 90),
            "p95": percentile(errs, 95),
            "within_5": share_pct(r["within_5"] for r in rs),
        }
    out["bound_by"] = collections.Counter(r.get("bound_by") or "not reported" for r in ok if r["answered"])
    # Pooled spread: root-mean-square over the rows of each row's spread.
    out["quick_cv"] = _rms([r["quick_cv_pct"] for r in rr])
    out["full_cv"] = _rms([r["full_cv_pct"] for r in rr])
    out["spread_ratio"] = out["quick_cv"] / out["full_cv"] if out["quick_cv"] is not None and out["full_cv"] else None
    ratios = [r["spread_ratio"] for r in rr if r["spread_ratio"] is not None]
    out["rows_spread_ok"] = sum(x <= TARGETS["spread_ratio"] for x in ratios)
    out["rows_spread_n"] = len(ratios)
    return out


def _at_least(x, target):
    return None if x is None else x >= target


def verdict_cc(c: dict) -> dict:
    """Each target met (True), missed (False) or not measurable here (None)."""
    v, hw = c["validate"], c["halfwidth"]
    return {
        "deadline": _at_least(c["on_time"], TARGETS["on_time"]),
        "time_saved_all": _at_least(c["time_saved_pct"], TARGETS["time_saved_all"]),
        "time_saved_big": _at_least(c["time_saved_pct_big"], TARGETS["time_saved_big"]),
        "traffic_saved_all": _at_least(c["traffic_saved_pct"], TARGETS["time_saved_all"]),
        "traffic_saved_big": _at_least(c["traffic_saved_pct_big"], TARGETS["time_saved_big"]),
        "halfwidth": hw["median"] <= TARGETS["halfwidth_median"] and hw["p90"] <= TARGETS["halfwidth_p90"],
        "coverage": _at_least(c["coverage"], TARGETS["coverage"]),
        "error": None
        if v["median"] is None
        else v["median"] <= TARGETS["median_abs_err"] and v["p95"] <= TARGETS["p95_abs_err"],
        "spread": None if c["spread_ratio"] is None else c["spread_ratio"] <= TARGETS["spread_ratio"],
    }


def _mark(ok: bool | None, na: str = "none measured") -> str:
    return f"n/a ({na})" if ok is None else "met" if ok else "**MISSED**"


BOUND_BY = (
    "statistics",
    "levels",
    "sawtooth",
    "random_loss",
    "growing",
    "lt_bw",
    "bbr_cycle",
    "bw_rising",
    "stalled",
    "receiver_window",
    "reordering",
    "reorder_overflow",
    "shared",
    "capacity",
    "short",
)


def summary_lines(rows: list[dict], runs: list[dict]) -> tuple[list[str], dict]:
    cs = [c for c in (cc_summary(rows, runs, cc) for cc in CCS) if c is not None]
    verdict = {c["cc"]: verdict_cc(c) for c in cs}
    lines = [
        "Time to answer and what it saved:",
        "",
        (
            "| cc | rows | runs | answered (converged / at deadline / fell back) "
            "| time to answer median / p95 s | by deadline % | time saved % all / BDP >= 1 MB "
            "| traffic saved % all / BDP >= 1 MB | target |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cs:
        ok = verdict[c["cc"]]
        nociq = f", {c['nociq']} without an interval" if c["nociq"] else ""
        errors = f" ({c['errors']} prober errors)" if c["errors"] else ""
        lines.append(
            f"| {c['cc']} | {c['rows']} | {c['runs']}{errors} "
            f"| {c['answered']}/{c['runs']} ({c['converged']} / {c['deadline']} / {c['fallback']}{nociq}) "
            f"| {fmt(c['answer_s']['median'])} / {fmt(c['answer_s']['p95'])} | {fmt(c['on_time'])} "
            f"| {fmt(c['time_saved_pct'])} / {fmt(c['time_saved_pct_big'])} "
            f"| {fmt(c['traffic_saved_pct'])} / {fmt(c['traffic_saved_pct_big'])} "
            f"| deadline {_mark(ok['deadline'])}, time saved {_mark(ok['time_saved_all'])} / "
            f"{_mark(ok['time_saved_big'], 'no row with BDP >= 1 MB')}, traffic saved "
            f"{_mark(ok['traffic_saved_all'])} / {_mark(ok['traffic_saved_big'], 'no row with BDP >= 1 MB')} |"
        )
    lines += [
        "",
        "The answers against the 20 s figure:",
        "",
        (
            "| cc | half-width median / p90 % | coverage % (paired) | separate: row's 20 s inside % "
            "| paired median / p95 \\|err\\| % | separate median / p95 \\|err\\| % "
            "| within +/- 5 % paired / separate | spread quick / 20 s % (ratio) | target |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cs:
        ok = verdict[c["cc"]]
        v, q, hw = c["validate"], c["quick"], c["halfwidth"]
        lines.append(
            f"| {c['cc']} | {fmt(hw['median'])} / {fmt(hw['p90'])} "
            f"| {fmt(c['coverage'])} of {c['coverage_n']} | {fmt(c['separate_inside'])} of {c['separate_inside_n']} "
            f"| {fmt(v['median'])} / {fmt(v['p95'])} | {fmt(q['median'])} / {fmt(q['p95'])} "
            f"| {fmt(v['within_5'])} / {fmt(q['within_5'])} "
            f"| {fmt(c['quick_cv'])} / {fmt(c['full_cv'])} ({fmt(c['spread_ratio'], 2)}) "
            f"| half-width {_mark(ok['halfwidth'])}, coverage {_mark(ok['coverage'])}, "
            f"error {_mark(ok['error'])}, spread {_mark(ok['spread'], 'no row with two runs')} |"
        )
    seen = sorted({k for c in cs for k in c["bound_by"]} - set(BOUND_BY))
    cols = [*BOUND_BY, *seen]
    lines += [
        "",
        "What bounded the intervals of the answered runs (`quick_bound_by`: the evidence that set the wider side):",
        "",
        "| cc | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for c in cs:
        lines.append(f"| {c['cc']} | " + " | ".join(str(c["bound_by"].get(k, 0)) for k in cols) + " |")
    return lines, verdict


# ---------------------------------------------------------------- report


ROW_COLUMNS = [
    ("id", "row"),
    ("queue_bdp", "queue x BDP"),
    ("loss", "loss"),
    ("jitter", "jitter"),
    ("cross", "cross"),
    ("full_mbps", "20 s Mb/s (median)"),
    ("full_after_ss_mbps", "20 s after ss"),
    ("answered", "answered"),
    ("answer_s", "time to answer s (median)"),
    ("on_time", "by deadline"),
    ("halfwidth_pct", "half-width % (median)"),
    ("covered", "paired covered"),
    ("validate_max_abs_err", "paired max \\|err\\| %"),
    ("quick_max_abs_err", "separate max \\|err\\| %"),
    ("quick_cv_pct", "quick spread %"),
    ("full_cv_pct", "20 s spread %"),
    ("spread_ratio", "ratio"),
    ("time_saved_pct", "time saved %"),
    ("traffic_saved_pct", "traffic saved %"),
    ("drops_queue", "queue drops"),
    ("extra_delay_sd_ms", "applied jitter sd ms"),
]
# Counts shown as "count/out of" in the per-row table.
ROW_FRACTIONS = {"answered": "estimates", "on_time": "estimates", "covered": "paired"}
RUN_COLUMNS = [
    "row",
    "cc",
    "kind",
    "run",
    "status",
    "answered",
    "figure_mbps",
    "estimate_mbps",
    "lo_mbps",
    "hi_mbps",
    "ci_pct",
    "halfwidth_pct",
    "bound_by",
    "window_s",
    "full_mbps",
    "error_pct",
    "within_5",
    "covered",
    "held_by",
    "rule",
    "ss_end_s",
    "answer_s",
    "deadline_s",
    "on_time",
    "elapsed_s",
    "quick_elapsed_s",
    "bytes_sent",
    "quick_bytes_sent",
    "time_saved_pct",
    "traffic_saved_pct",
    "full_after_ss_mbps",
    "bound_text",
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


def _row_cell(r: dict, k: str) -> str:
    if k in ROW_FRACTIONS:
        return f"{r[k]}/{r[ROW_FRACTIONS[k]]}"
    if k == "loss":
        return f"{r[k]:g}"
    return fmt(r[k], 2 if k in ("spread_ratio", "extra_delay_sd_ms", "queue_bdp") else 1)


# One line per figure: how it is computed (the report's header).
HOW = [
    (
        "- **runs**: every `validate -t 20` run (**paired**: what quick mode said on the same "
        "connection as the 20 s figure) and every separate `quick` run (**separate**: what a "
        "user gets, against the median of the row's validate 20 s figures); a prober error is "
        "listed under the rows and not counted."
    ),
    (
        "- **answered**: `quick_answered` (older runs: `quick_converged`); converged / answered at "
        "the deadline / fell back (the full run was the result: `--until-converged`, or quick mode "
        "was not entered). A run that did not answer is a miss for the deadline and coverage and "
        "saves 0 %; nothing counts as exact."
    ),
    (
        "- **time to answer**: a quick run's `elapsed_s`, a validate run's `quick_elapsed_s` (both "
        "from the first byte written); a run that did not answer: its full run's `elapsed_s`."
    ),
    (
        "- **by deadline**: share of runs that answered within 5 s on rows with RTT <= 100 ms, "
        "else within their own `slow_start_end_s` + 4 s (target >= 95 %)."
    ),
    (
        "- **time / traffic saved**: 1 - time to answer (bytes sent by then) / the 20 s run's "
        "(paired: its own; separate: the mean of the row's validate runs), 0 % for a run that did "
        "not answer; median over all runs (target >= 80 %) and over the runs on rows with BDP >= "
        "1 MB (target >= 85 %)."
    ),
    (
        "- **half-width**: 100 x max(hi - q, q - lo) / q of the 95 % interval [`quick_lo_bps`, "
        "`quick_hi_bps`] (older runs: `quick_bps` +/- `quick_ci_pct`), median and p90 over all "
        "runs (targets <= 5 %, <= 15 %); a run that did not answer counts with the interval it had "
        "when it gave up, one with no interval as inf."
    ),
    (
        "- **coverage (paired)**: share of validate runs whose own 20 s `full_bps` lies inside "
        "their own quick answer's [lo, hi]; a run that did not answer is a miss (target >= 90 %)."
    ),
    (
        "- **separate: row's 20 s inside**: share of separate quick runs whose [lo, hi] holds the "
        "median of the row's validate `full_bps` (reported, no target: another connection)."
    ),
    (
        "- **\\|err\\|**: 100 x \\|`quick_bps` - 20 s\\| / 20 s (paired: the same connection's; "
        "separate: the row's median), median and p95 (targets paired median <= 3 %, p95 <= 10 %); "
        "a run that did not answer counts with its estimate at give-up, one with none as inf."
    ),
    "- **within +/- 5 %**: share of runs that answered with \\|err\\| <= 5 %.",
    (
        "- **bound by**: counts of `quick_bound_by` over the answered runs: which evidence set the "
        "wider side of the interval (`not reported`: a prober before issue 24)."
    ),
    (
        "- **spread**: run-to-run std-dev in % of the mean, of the row's quick figures (paired and "
        "separate: each its own connection) and of its 20 s runs (the validate runs and the "
        "separate runs that fell back to a whole 20 s run); per cc the root-mean-square over its "
        "rows, and their ratio (target <= 1.5)."
    ),
    (
        "- **20 s after ss**: the 20 s runs' own rate from their slow-start end to their end: the "
        "steady state that the 20 s figure dilutes with slow-start."
    ),
]


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
            "9000, 1500 on dial-up) and a real `iperf3 -s` (or `iperf -s`). Every figure is per "
            "congestion control over every run:"
        ),
        "",
        *HOW,
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
        lines.append("| " + " | ".join(_row_cell(r, k) for k, _ in ROW_COLUMNS) + " |")
    errs = [r for r in rows if r["errors"]]
    if errs:
        lines += ["", "Prober errors: " + "; ".join(f"{r['id']}: {r['errors']}" for r in errs)]
    lines += ["", "## Where quick mode missed", ""]
    lines += meta.get("misses") or [
        "Every run answered, within 10 % of its 20 s figure and with that figure inside its interval."
    ]
    lines += [
        "",
        "## Figures",
        "",
        (
            "- `fig7-quick-vs-20s.png`: every quick answer vs its 20 s reference, with its 95 % "
            "interval [lo, hi] as an error bar and the 20 s runs' min-max (the paper's Figure 7)."
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


def is_miss(x: dict) -> bool:
    """A run worth a look: it did not answer, or is off by > 10 %, or its interval missed."""
    return not x["answered"] or abs_err(x) > MISS_ERR_PCT or x.get("covered") is False


def _interval_words(x: dict) -> str:
    if x.get("lo_mbps") is None:
        return "no interval"
    by = f", bounded by {x['bound_by']}" if x.get("bound_by") else ""
    return f"95 %: {fmt(x['lo_mbps'])}-{fmt(x['hi_mbps'])}{by}"


def describe_misses(measured: list[dict], rows: list[dict], runs: list[dict]) -> list[str]:
    """For every row with a run that missed (is_miss): the worst run and its series."""
    out = []
    for m, r in zip(measured, rows):
        mine = [x for x in runs if x["row"] == r["id"] and "error" not in x]
        bad = [x for x in mine if is_miss(x)]
        if not bad:
            continue
        # worst: the farthest estimate; no estimate at all is the farthest
        worst = max(bad, key=abs_err)
        row: Row = m["row"]
        events = m[worst["kind"]][worst["run"]]
        nfb = sum(not x["answered"] for x in mine)
        held = collections.Counter(
            x.get("held_by") or ("not reported" if x.get("estimate_mbps") else "not entered")
            for x in mine
            if not x["answered"]
        )
        held_s = " (held open by: " + ", ".join(f"{k} {v}" for k, v in held.most_common()) + ")" if held else ""
        off = sum(x.get("error_pct") is not None and abs(x["error_pct"]) > MISS_ERR_PCT for x in mine)
        outside = sum(x["answered"] and x.get("covered") is False for x in mine)
        answered = sum(x["answered"] for x in mine)
        text = f' "{worst["bound_text"]}"' if worst.get("bound_text") else ""
        out += [
            (
                f"### {row.id}: {off} of {len(mine)} estimates off by > 10 %, {outside} of {answered} "
                f"intervals missed the 20 s figure, {nfb} did not answer{held_s}"
            ),
            "",
            f"Path {row.path.description}; queue drops {r['drops_queue']}, random drops "
            f"{r['drops_loss']}. 20 s runs {fmt(r['full_mbps'])} Mbit/s (after their slow-start "
            f"{fmt(r['full_after_ss_mbps'])}). Errors of the row's estimates (paired, then "
            "separate): "
            + ", ".join(f"{fmt(x.get('error_pct'))}{'' if x['answered'] else '*'}" for x in mine)
            + " % (* did not answer: its estimate at give-up).",
            "",
            (
                f"Worst: {worst['kind']} run {worst['run']}: estimate {fmt(worst.get('estimate_mbps'))} "
                f"({_interval_words(worst)}) over {fmt(worst.get('window_s'), 2)} s, {worst['status']}"
                f"{' (held open by: ' + worst['held_by'] + ')' if worst.get('held_by') else ''}, "
                f"rule {worst.get('rule')} at {fmt(worst.get('ss_end_s'), 2)} s.{text} "
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


def fig7_point(r: dict, row_full_mbps: float | None, fulls: list[float]) -> dict | None:
    """One run's point on Figure 7: x its 20 s reference (paired: its own connection's;
    separate: the row's median, with the row's 20 s min-max as an x bar), y its estimate with
    its asymmetric interval as a y bar; a run with no estimate is drawn at its full run's
    figure. None when it has nothing to draw."""
    x = r.get("full_mbps") if r["kind"] == "validate" else row_full_mbps
    y = r.get("estimate_mbps") or r.get("figure_mbps")
    if "error" in r or not x or not y:
        return None
    yerr = None
    if r.get("estimate_mbps") and r.get("lo_mbps") is not None:
        yerr = (y - r["lo_mbps"], r["hi_mbps"] - y)
    xerr = (x - min(fulls), max(fulls) - x) if r["kind"] == "quick" and fulls else None
    return {"x": x, "y": y, "xerr": xerr, "yerr": yerr, "filled": bool(r["answered"])}


def plot_fig7(rows: list[dict], runs: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 6.0))
    colours = {"reno": "tab:blue", "cubic": "tab:orange", "bbr": "tab:green"}
    by_id = {r["id"]: r for r in rows}
    vals = []
    for r in runs:
        fulls = [v["full_mbps"] for v in runs if v["row"] == r["row"] and v.get("full_mbps")]
        pt = fig7_point(r, by_id[r["row"]]["full_mbps"], fulls)
        if pt is None:
            continue
        c = colours.get(r["cc"], "k")
        ax.errorbar(
            pt["x"],
            pt["y"],
            xerr=None if pt["xerr"] is None else [[pt["xerr"][0]], [pt["xerr"][1]]],
            yerr=None if pt["yerr"] is None else [[pt["yerr"][0]], [pt["yerr"][1]]],
            fmt="o" if r["kind"] == "validate" else "s",
            ms=4,
            color=c,
            mfc=c if pt["filled"] else "none",
            elinewidth=0.7,
            capsize=2,
            alpha=0.8,
        )
        vals += [pt["x"], pt["y"]]
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
    ax.scatter([], [], marker="o", facecolors="none", edgecolors="grey", label="did not answer (estimate at give-up)")
    ax.set(
        xscale="log",
        yscale="log",
        xlim=xs,
        ylim=xs,
        xlabel="20 s measurement (Mbit/s)",
        ylabel="quick answer (Mbit/s), bar: its 95 % interval [lo, hi]",
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
        lo, hi = interval_of(vv)
        if lo is not None:
            label += f": {vv['quick_bps'] / 1e6:.1f} Mbit/s (95 %: {lo / 1e6:.1f}-{hi / 1e6:.1f})"
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
    ap.add_argument("--full", action="store_true", help="the large matrix (147 rows, about 3 h 10 min)")
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
        "--reuse",
        action="store_true",
        help=f"rebuild the report from the runs in --runs-dir (no traffic); --runs-dir {BENCH_DIR / KEPT} "
        "reads the gzipped runs kept beside the report",
    )
    ap.add_argument(
        "--keep",
        action="store_true",
        help=f"only gzip the runs in --runs-dir into {KEPT}/ beside the report (done after every measuring run)",
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
    if a.keep:
        meta_file = a.runs_dir / "meta.json"
        meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
        print(f"kept {keep_runs(a.runs_dir, a.out / KEPT, meta)} runs in {a.out / KEPT}")
        return 0
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
            f"separate {fmt(s['quick_max_abs_err']):>5} %  answered {s['answered']}/{s['estimates']}  "
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
        if a.seconds == 20 and not a.only:
            keep_runs(a.runs_dir, a.out / KEPT, meta)
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
