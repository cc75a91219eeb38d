#!/usr/bin/env python3
"""How close is quick mode to a 20 s test? Measured over emulated WAN paths (the path lab).

    make bench-quick            # default matrix, under 10 minutes
    make bench-quick FULL=1     # the large matrix: 128 rows x ~47 s, about 1 h 40 min
    bench_quick.py --only caltech-cubic-P1 --seconds 5    # one row, short runs (smoke test)

For every matrix row a fresh lab (prober/lab/labctl.py) is brought up and the prober runs
three times against the real `iperf3 -s` / `iperf -s` in the far namespace:
  validate  -t 20: the 20 s result and what quick mode would have said on the same connection
  quick     -t 20: a separate quick-mode run (what a user of the portal gets)
  full      -t 20: a separate 20 s run (what iperf would have said)
and writes prober/bench/report-quick.md, report-quick.csv and the figures (PNG), keeping the
raw JSON Lines of every run in test-artifacts/bench-quick/ (not committed).
"""
from __future__ import annotations

import argparse
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
BENCH_DIR = ROOT / "prober" / "bench"
RUNS_DIR = ROOT / "test-artifacts" / "bench-quick"
NOTES = ROOT / ".coord" / "detector-notes.md"
TARGETS = {"median_abs_err": 5.0, "p90_abs_err": 10.0, "time_saved": 85.0, "traffic_saved": 80.0}
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


def _custom(name, rate, rtt, queue_bdp=1.0, **kw) -> labctl.PathSpec:
    """A path from the cross-product: the queue is a multiple of the BDP (at least 64 KB)."""
    bdp = rate * 1e6 / 8 * rtt / 1e3
    return labctl.PathSpec(name=name, rate_mbps=rate, rtt_ms=rtt,
                           queue_bytes=max(65536, int(queue_bdp * bdp)),
                           description=f"{rate} Mbit/s, {rtt} ms, queue {queue_bdp:g} x BDP", **kw)


def default_matrix() -> list[Row]:
    # Eleven rows x ~47 s (measured: 12 rows took 9.4 min, too close to the 10 min budget):
    # every cc, 1 and 4 streams, 10-140 ms, 1-500 Mbit/s, the lossy, the window-limited and
    # the dial-up paths, and BDP >= 1 MB rows for every cc.
    p = labctl.load_paths()
    return [
        Row(p["caltech"], "reno"), Row(p["caltech"], "cubic"), Row(p["caltech"], "bbr"),
        Row(p["japan"], "cubic"), Row(p["japan"], "bbr"), Row(p["japan"], "reno", 4),
        Row(p["rice"], "cubic"), Row(p["lossy"], "cubic"),
        Row(p["dialup"], "reno"),
        Row(_custom("metro500", 500, 10), "bbr"),
        Row(_custom("slow10", 10, 100), "cubic"),
    ]


def full_matrix() -> list[Row]:
    rows = []
    for rtt in (10, 24, 50, 140):
        for rate in (10, 100, 300):
            for cc in ("reno", "cubic", "bbr"):
                for streams in (1, 4):
                    rows.append(Row(_custom(f"r{rate}-{rtt}ms", rate, rtt), cc, streams))
                rows.append(Row(_custom(f"r{rate}-{rtt}ms-q0.25", rate, rtt, 0.25), cc))
    p = labctl.load_paths()
    for name in ("caltech", "japan", "rice", "wan50", "lossy", "dialup"):
        for cc in ("reno", "cubic", "bbr"):
            rows.append(Row(p[name], cc))
    rows.append(Row(_custom("metro500", 500, 10), "bbr"))
    rows.append(Row(_custom("metro500", 500, 10), "cubic"))
    return rows


# ---------------------------------------------------------------- running


def run_prober(lab: labctl.Lab, row: Row, mode: str, seconds: int, log: Path) -> list[dict]:
    argv = [str(QUICKPROBE), "-c", lab.far_addr, "-p", str(lab.port), "--json",
            "--mode", mode, "-t", str(seconds), "-C", row.cc, "-P", str(row.streams)]
    if row.path.server == "iperf2":
        argv.append("--iperf2")
    try:
        r = lab.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        # A hung prober is a result too: record it and go on with the matrix.
        log.write_text(f"# killed after {seconds + 60} s\n")
        return [{"event": "error", "code": "bench_timeout",
                 "message": f"quickprobe did not finish within {seconds + 60} s"}]
    log.write_text(r.stdout + (f"\n# stderr:\n{r.stderr}" if r.stderr else ""))
    events = []
    for line in r.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    if not events or events[-1].get("event") not in ("result", "error"):
        events.append({"event": "error", "code": "no_result",
                       "message": f"exit {r.returncode}: {r.stderr.strip()[-300:]}"})
    return events


def final(events: list[dict]) -> dict:
    return events[-1]


def prober_build() -> str:
    """Short hash of the quickprobe binary: the prober is rebuilt while others work, and a
    report must not mix builds without saying so."""
    return hashlib.sha256(QUICKPROBE.read_bytes()).hexdigest()[:12]


def measure_row(row: Row, seconds: int, runs_dir: Path) -> dict:
    out = {"row": row, "build": prober_build()}
    with labctl.Lab(row.path, log_dir=runs_dir) as lab:
        for mode in ("validate", "quick", "full"):
            ev = run_prober(lab, row, mode, seconds, runs_dir / f"{row.id}.{mode}.jsonl")
            out[mode] = ev
            time.sleep(0.3)   # let the last FIN/ACKs cross before the next connection
        out["lab"] = lab.stats()
    after = prober_build()
    if after != out["build"]:
        out["build"] += f"->{after}"
    (runs_dir / f"{row.id}.lab.json").write_text(json.dumps({**out["lab"], "build": out["build"]}))
    return out


def load_row(row: Row, runs_dir: Path) -> dict:
    """A row measured earlier (--reuse): its runs' JSON Lines and the delay line's counters."""
    out = {"row": row}
    for mode in ("validate", "quick", "full"):
        f = runs_dir / f"{row.id}.{mode}.jsonl"
        if not f.exists():
            raise SystemExit(f"bench_quick: --reuse: {f} is missing; run without --reuse")
        out[mode] = [json.loads(x) for x in f.read_text().splitlines() if x.startswith("{")]
    out["lab"] = json.loads((runs_dir / f"{row.id}.lab.json").read_text())
    out["build"] = out["lab"].get("build", "unknown")
    return out


# ---------------------------------------------------------------- analysis


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


def starts_in_recovery(events: list[dict], t_end: float | None) -> bool | None:
    """1 if any stream was in loss recovery (tcpi_ca_state Recovery/Loss) at the first sample
    of the quick window: its acked-bytes count then jumps when the hole is filled, crediting
    the window with data delivered before it."""
    if t_end is None:
        return None
    for e in events:
        if e["event"] == "sample" and e["t"] >= t_end:
            return any((st.get("ca_state") or 0) >= 3 for st in e["streams"])
    return None


def pct(a, b):
    return None if a is None or not b else 100.0 * (a - b) / b


def summarise(m: dict) -> dict:
    row: Row = m["row"]
    v, q, f = final(m["validate"]), final(m["quick"]), final(m["full"])
    s = {"id": row.id, "path": row.path.name, "rate_mbps": row.path.rate_mbps,
         "rtt_ms": row.path.rtt_ms, "queue_bytes": row.path.queue_bytes, "loss": row.path.loss,
         "server": row.path.server + (f" -w {row.path.server_window}" if row.path.server_window else ""),
         "cc": row.cc, "streams": row.streams, "bdp_bytes": row.path.bdp_bytes,
         "errors": ";".join(f"{k}:{e.get('code')}" for k, e in (("validate", v), ("quick", q), ("full", f))
                            if e["event"] == "error")}
    qok, fok, vok = q["event"] == "result", f["event"] == "result", v["event"] == "result"
    s["quick_mbps"] = q["quick_bps"] / 1e6 if qok and q.get("quick_bps") else None
    s["quick_entered"] = q.get("quick_mode_entered") if qok else None
    s["quick_fallback_mbps"] = q["cumulative_bps"] / 1e6 if qok else None
    s["full_mbps"] = f["full_bps"] / 1e6 if fok and f.get("full_bps") else None
    reported = s["quick_mbps"] if s["quick_mbps"] is not None else s["quick_fallback_mbps"]
    s["error_pct"] = pct(reported, s["full_mbps"])
    s["rule"] = q.get("rule") if qok else None
    s["ss_end_s"] = q.get("slow_start_end_s") if qok else None
    s["quick_elapsed_s"] = q.get("elapsed_s") if qok else None
    s["full_elapsed_s"] = f.get("elapsed_s") if fok else None
    s["time_saved_pct"] = (100 * (1 - s["quick_elapsed_s"] / s["full_elapsed_s"])
                           if qok and fok else None)
    s["traffic_saved_pct"] = (100 * (1 - q["bytes_sent"] / f["bytes_sent"]) if qok and fok else None)
    vv = v.get("validate") if vok else None
    s["paired_quick_mbps"] = vv["quick_bps"] / 1e6 if vv and vv.get("quick_bps") else None
    s["paired_full_mbps"] = v["full_bps"] / 1e6 if vok else None
    s["paired_error_pct"] = vv.get("error_pct") if vv else None
    s["paired_rule"] = vv.get("rule") if vv else None
    mss = (q.get("mss_bytes") if qok else None) or row.path.mtu - 52
    formula = paper_ss_s(row, mss)
    s["full_after_ss_mbps"] = rate_after_ss(m["full"])
    s["quick_in_recovery"] = starts_in_recovery(m["quick"], s["ss_end_s"])
    s["paired_in_recovery"] = starts_in_recovery(m["validate"], _validate_end(m))
    # IP rate x payload share: no receiver can get more than this through the bottleneck.
    ceiling = row.path.rate_mbps * (row.path.mtu - 52) / row.path.mtu
    s["quick_above_bottleneck"] = bool(s["quick_mbps"] and s["quick_mbps"] > 1.01 * ceiling)
    s["ss_paper_s"] = formula
    s["ss_paper_x2_s"] = 2 * formula if formula else None
    lab = m["lab"]
    s["prober_build"] = m["build"]
    s["drops_queue"] = lab["fwd"]["drop_queue_packets"]
    s["drops_loss"] = lab["fwd"]["drop_loss_packets"]
    s["delayline_late_max_ms"] = lab["fwd"]["late_max_us"] / 1e3
    return s


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


def summary_tables(rows: list[dict]) -> tuple[list[str], dict]:
    lines, verdict = [], {}
    lines += ["| cc | rows | median abs error % | p90 abs error % | paired median % | paired p90 % | target |",
              "|---|---|---|---|---|---|---|"]
    for cc in ("reno", "cubic", "bbr"):
        errs = [abs(r["error_pct"]) for r in rows if r["cc"] == cc and r["error_pct"] is not None]
        perr = [abs(r["paired_error_pct"]) for r in rows
                if r["cc"] == cc and r["paired_error_pct"] is not None]
        if not errs:
            continue
        med, p90 = statistics.median(errs), percentile(errs, 90)
        ok = med <= TARGETS["median_abs_err"] and p90 <= TARGETS["p90_abs_err"]
        verdict[cc] = ok
        lines.append(f"| {cc} | {len(errs)} | {med:.1f} | {p90:.1f} | "
                     f"{fmt(statistics.median(perr) if perr else None)} | "
                     f"{fmt(percentile(perr, 90))} | {'met' if ok else 'MISSED'} "
                     f"(<= {TARGETS['median_abs_err']:g} / {TARGETS['p90_abs_err']:g}) |")
    pairs = [(r["quick_in_recovery"], r["error_pct"]) for r in rows] + \
            [(r["paired_in_recovery"], r["paired_error_pct"]) for r in rows]
    rec = [abs(e) for f, e in pairs if f and e is not None]
    clean = [abs(e) for f, e in pairs if f is False and e is not None]
    if not rec and clean:
        lines += ["", f"No quick window (of {len(clean)}, quick and paired runs) began while a "
                  "stream was in loss recovery."]
    if rec and clean:
        lines += ["", f"Quick windows (quick and paired runs together) that began while a stream was "
                  f"in loss recovery: {len(rec)}, median |error| {statistics.median(rec):.1f} %, "
                  f"max {max(rec):.1f} %; the other {len(clean)}: median |error| "
                  f"{statistics.median(clean):.1f} %, max {max(clean):.1f} %."]
    big = [r for r in rows if r["bdp_bytes"] >= BIG_BDP and r["time_saved_pct"] is not None]
    lines += ["", f"Paths with BDP >= 1 MB ({len(big)} rows):", "",
              "| measure | median | min | target |", "|---|---|---|---|"]
    for key, name in (("time_saved_pct", "time saved %"), ("traffic_saved_pct", "traffic saved %")):
        xs = [r[key] for r in big]
        if xs:
            target = TARGETS["time_saved" if key.startswith("time") else "traffic_saved"]
            med = statistics.median(xs)
            verdict[key] = med >= target
            lines.append(f"| {name} | {med:.1f} | {min(xs):.1f} | >= {target:g} "
                         f"({'met' if med >= target else 'MISSED'}) |")
    return lines, verdict


COLUMNS = [("id", "row"), ("rate_mbps", "rate Mb/s"), ("rtt_ms", "RTT ms"),
           ("queue_bytes", "queue B"), ("streams", "P"), ("quick_mbps", "quick Mb/s"),
           ("full_mbps", "20 s Mb/s"), ("error_pct", "error %"),
           ("full_after_ss_mbps", "20 s after its ss Mb/s"),
           ("paired_error_pct", "paired error %"), ("rule", "rule"),
           ("quick_in_recovery", "window in recovery (quick/paired)"),
           ("quick_elapsed_s", "quick s"), ("time_saved_pct", "time saved %"),
           ("traffic_saved_pct", "traffic saved %"),
           ("ss_end_s", "ss end s"), ("ss_paper_s", "paper ss s"), ("ss_paper_x2_s", "paper x2 s"),
           ("drops_queue", "queue drops")]


def write_report(rows: list[dict], meta: dict, out: Path) -> dict:
    with open(out / "report-quick.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    lines = ["# Quick mode vs a 20 s test over emulated paths", "",
             f"Generated by `{meta['command']}` on {meta['date']} in {meta['wall_s'] / 60:.1f} min "
             f"({len(rows)} rows; kernel {meta['kernel']}; runs of {meta['seconds']} s). "
             "Each row had its own freshly created lab (prober/lab/labctl.py: userspace delay line "
             "between two network namespaces, jumbo MTU) and three prober runs against a real "
             "`iperf3 -s` (or `iperf -s`): `validate`, `quick`, `full`.", "",
             "- **quick / 20 s / error %**: the separate quick run's estimate vs the separate 20 s "
             "run (`full`); when quick mode was not entered the quick run's figure is its "
             "cumulative rate after the full time (the paper's fallback).",
             "- **paired error %**: the `validate` run: quick estimate and 20 s result from the same "
             "connection, so path variation between runs cannot spoil it.",
             "- **20 s after its ss**: the 20 s run's own rate from its slow-start end to its end "
             "(acked bytes): the steady state that the 20 s figure dilutes with slow-start.",
             "- **quick s / time / traffic saved %**: the quick run's elapsed time (slow-start, the "
             "1 s window and the prober's drain before TEST_END); 1 - quick run's elapsed time "
             "(bytes sent) / 20 s run's.",
             "- **paper ss s**: ceil(log2(ideal window / MSS)) x RTT with the ideal window = BDP / "
             "streams (or the server's window if smaller); **x2** for delayed ACKs. The paper "
             "assumed an initial window of 1 MSS; Linux starts at 10, which takes about "
             "log2(10) = 3.3 RTTs off.", "",
             "## Summary", ""]
    builds = sorted({r["prober_build"] for r in rows})
    lines += [f"quickprobe build (sha256 of prober/build/quickprobe, first 12 hex): "
              + ", ".join(builds)
              + (" -- MIXED: the prober was rebuilt during this run; the rows' builds are in the CSV."
                 if len(builds) > 1 else ""), ""]
    summ, verdict = summary_tables(rows)
    lines += summ
    lines += ["", "## Per path", "",
              "| " + " | ".join(h for _, h in COLUMNS) + " |",
              "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = []
        for k, _ in COLUMNS:
            if k == "quick_in_recovery":
                cells.append(f"{fmt(r[k])}/{fmt(r['paired_in_recovery'])}")
            elif k == "quick_mbps" and r["quick_above_bottleneck"]:
                cells.append(f"{fmt(r[k])} (above the bottleneck)")
            else:
                cells.append(fmt(r[k], 2 if k.startswith("ss_") else 1))
        lines.append("| " + " | ".join(cells) + " |")
    errs = [r for r in rows if r["errors"]]
    if errs:
        lines += ["", "Prober errors: " + "; ".join(f"{r['id']}: {r['errors']}" for r in errs)]
    lines += ["", "## Where quick mode missed", ""]
    misses = meta.get("misses") or []
    lines += misses if misses else ["No row had |error| or |paired error| > 10 %, and every quick "
                                    "run entered quick mode."]
    lines += ["", "## Figures", "",
              "- `fig7-quick-vs-20s.png`: quick estimate vs 20 s result (the paper's Figure 7).",
              *[f"- `{p}`: cwnd, InstBW and CumuBW vs time of the `validate` run "
                f"(the paper's Figures 8-10)." for p in meta.get("trace_pngs", [])], ""]
    (out / "report-quick.md").write_text("\n".join(lines))
    return verdict


# ---------------------------------------------------------------- misses


def series_excerpt(events: list[dict], around_t: float | None, rtt_s: float) -> list[str]:
    """The sample series a detector sees, one line per ~2 RTT, around its decision."""
    samples = [e for e in events if e["event"] == "sample"]
    if not samples:
        return ["(no samples)"]
    step = max(1, int(2 * rtt_s / 0.02))
    centre = around_t if around_t is not None else samples[-1]["t"]
    lines = ["t_s    cwnd_KB  ssthresh_KB  rtt_ms  deliv_Mbps  inst_Mbps  in_ss  retrans"]
    for s in samples[::step]:
        if abs(s["t"] - centre) > 12 * rtt_s + 1.5:
            continue
        st = s["streams"][0]
        lines.append(f"{s['t']:5.2f}  {st['cwnd_bytes'] / 1e3:8.0f}  "
                     f"{(st['ssthresh_bytes'] or 0) / 1e3:11.0f}  {st['rtt_us'] / 1e3:6.1f}  "
                     f"{(st['delivery_rate_bps'] or 0) / 1e6:10.1f}  {s['inst_bps'] / 1e6:9.1f}  "
                     f"{str(st['in_slow_start'])[0]:>5}  {s['retransmits']:7d}")
    return lines


def _validate_end(m: dict) -> float | None:
    v = final(m["validate"])
    vv = v.get("validate") if v["event"] == "result" else None
    return vv.get("slow_start_end_s") if vv else None


def describe_misses(measured: list[dict], rows: list[dict]) -> list[str]:
    out = []
    for m, r in zip(measured, rows):
        entered = r["quick_entered"]
        bad = any(r[k] is not None and abs(r[k]) > MISS_ERR_PCT
                  for k in ("error_pct", "paired_error_pct"))
        if entered is not False and not bad:
            continue
        row: Row = m["row"]
        sep_bad = r["error_pct"] is not None and abs(r["error_pct"]) > MISS_ERR_PCT
        run = "quick" if (entered is False or sep_bad) else "validate"
        at = r["ss_end_s"] if run == "quick" else _validate_end(m)
        why = ("quick mode was never entered (no rule fired within -t)" if entered is False
               else f"quick {fmt(r['quick_mbps'])} vs 20 s {fmt(r['full_mbps'])} Mbit/s: "
                    f"error {fmt(r['error_pct'])} % (paired {fmt(r['paired_error_pct'])} %), "
                    f"rule {r['rule']} at {fmt(r['ss_end_s'], 2)} s")
        out += [f"### {row.id}: {why}", "",
                f"Path {row.path.rate_mbps:g} Mbit/s, {row.path.rtt_ms:g} ms, queue "
                f"{row.path.queue_bytes} B, loss {row.path.loss:g}; queue drops "
                f"{r['drops_queue']}, random drops {r['drops_loss']}. Series of the {run} run "
                "(stream 1, every ~2 RTT):", "", "```",
                *series_excerpt(m[run], at, row.path.rtt_ms / 1e3), "```", ""]
    return out


# ---------------------------------------------------------------- figures


def plot_fig7(rows: list[dict], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    colours = {"reno": "tab:blue", "cubic": "tab:orange", "bbr": "tab:green"}
    pts = [r for r in rows if r["full_mbps"] and (r["quick_mbps"] or r["quick_fallback_mbps"])]
    for r in pts:
        q = r["quick_mbps"] or r["quick_fallback_mbps"]
        ax.scatter(r["full_mbps"], q, c=colours.get(r["cc"], "k"),
                   marker="o" if r["streams"] == 1 else "s",
                   facecolors="none" if not r["quick_entered"] else None, s=40)
    vals = [r["full_mbps"] for r in pts] + [r["quick_mbps"] or r["quick_fallback_mbps"] for r in pts]
    lo = min([1.0] + vals) * 0.7
    hi = max([10.0] + vals) * 1.4
    xs = [lo, hi]
    ax.plot(xs, xs, "k-", lw=0.8, label="quick = 20 s")
    ax.plot(xs, [x * 1.1 for x in xs], "k:", lw=0.8, label="+/- 10 %")
    ax.plot(xs, [x * 0.9 for x in xs], "k:", lw=0.8)
    for cc, c in colours.items():
        ax.scatter([], [], c=c, label=cc)
    ax.scatter([], [], marker="s", c="grey", label="4 streams")
    ax.set(xscale="log", yscale="log", xlim=xs, ylim=xs, xlabel="20 s measurement (Mbit/s)",
           ylabel="quick mode (Mbit/s)", title="Quick mode vs 20 s (emulated paths)")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "fig7-quick-vs-20s.png", dpi=110)
    plt.close(fig)


def plot_trace(m: dict, out: Path) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ev = m["validate"]
    samples = [e for e in ev if e["event"] == "sample"]
    t = [s["t"] for s in samples]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ax.plot(t, [s["inst_bps"] / 1e6 for s in samples], lw=0.9, label="InstBW (500 ms)")
    ax.plot(t, [s["cumu_bps"] / 1e6 for s in samples], lw=0.9, label="CumuBW")
    ax.set(xlabel="time (s)", ylabel="Mbit/s")
    ax2 = ax.twinx()
    ax2.plot(t, [s["cwnd_bytes"] / 1e6 for s in samples], "g-", lw=0.7, label="cwnd (sum)")
    ax2.set_ylabel("cwnd (MB)")
    res = final(ev)
    vv = res.get("validate") if res.get("event") == "result" else None
    if vv and vv.get("slow_start_end_s") is not None:
        e = vv["slow_start_end_s"]
        ax.axvline(e, color="r", ls="--", lw=0.8)
        ax.axvline(e + 1.0, color="r", ls=":", lw=0.8)
        ax.text(e, ax.get_ylim()[1] * 0.95, f" slow-start end ({vv['rule']})", fontsize=7, color="r")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="lower right", fontsize=8)
    row: Row = m["row"]
    ax.set_title(f"Throughput and cwnd: {row.id} ({row.path.rate_mbps:g} Mbit/s, "
                 f"{row.path.rtt_ms:g} ms)", fontsize=10)
    fig.tight_layout()
    name = f"fig-trace-{row.id}.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def pick_trace_rows(measured: list[dict]) -> list[dict]:
    # The paper's three: Caltech (the expected shape), Japan (long RTT), Rice (window-limited).
    want = ["caltech", "japan", "rice"]
    picked = []
    for name in want:
        for m in measured:
            if m["row"].path.name == name and final(m["validate"])["event"] == "result":
                picked.append(m)
                break
    return picked or measured[:3]


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="the large matrix (128 rows, about 1 h 40 min)")
    ap.add_argument("--only", help="comma-separated row ids (see --list)")
    ap.add_argument("--list", action="store_true", help="list the matrix rows and exit")
    ap.add_argument("--seconds", type=int, default=20, help="length of the full runs (default 20)")
    ap.add_argument("--out", type=Path, default=BENCH_DIR, help="where the report goes")
    ap.add_argument("--runs-dir", type=Path, default=RUNS_DIR,
                    help=f"where the raw JSON Lines of every run go (default {RUNS_DIR})")
    ap.add_argument("--reuse", action="store_true",
                    help="rebuild the report from the runs kept in --runs-dir (no traffic)")
    a = ap.parse_args(argv)
    matrix = full_matrix() if a.full else default_matrix()
    if a.only:
        ids = set(a.only.split(","))
        unknown = ids - {r.id for r in matrix}
        if unknown:
            raise SystemExit(f"bench_quick: unknown row ids {sorted(unknown)}; see --list")
        matrix = [r for r in matrix if r.id in ids]
    if a.list:
        for r in matrix:
            print(f"{r.id:28s} BDP {r.path.bdp_bytes / 1e6:6.2f} MB  {r.path.description}")
        return 0
    reason = None if a.reuse else labctl.lab_unavailable_reason()
    if reason:
        raise SystemExit(f"bench_quick: {reason}")
    if not QUICKPROBE.exists():
        raise SystemExit(f"bench_quick: {QUICKPROBE} is not built: run `make prober`")
    a.runs_dir.mkdir(parents=True, exist_ok=True)
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    measured, rows = [], []
    for i, row in enumerate(matrix, 1):
        m = load_row(row, a.runs_dir) if a.reuse else measure_row(row, a.seconds, a.runs_dir)
        s = summarise(m)
        measured.append(m)
        rows.append(s)
        print(f"[{i}/{len(matrix)} {time.monotonic() - t0:5.0f}s] {row.id:26s} quick "
              f"{fmt(s['quick_mbps']):>7} {a.seconds}s {fmt(s['full_mbps']):>7} Mbit/s  error "
              f"{fmt(s['error_pct']):>6} %  paired {fmt(s['paired_error_pct']):>6} %  "
              f"rule {s['rule']}  time saved {fmt(s['time_saved_pct'])} %  "
              f"{s['errors']}", flush=True)
    misses = describe_misses(measured, rows)
    trace_pngs = [plot_trace(m, a.out) for m in pick_trace_rows(measured)]
    plot_fig7(rows, a.out)
    meta = {"command": "make bench-quick" + (" FULL=1" if a.full else "")
            + (f" (--only {a.only})" if a.only else "")
            + (f" (--seconds {a.seconds})" if a.seconds != 20 else ""),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "wall_s": time.monotonic() - t0, "kernel": os.uname().release, "seconds": a.seconds}
    # A rebuilt report keeps the measuring run's command, date and duration.
    meta_file = a.runs_dir / "meta.json"
    if a.reuse and meta_file.exists():
        meta.update(json.loads(meta_file.read_text()))
        meta["command"] += " (report rebuilt with --reuse)"
    elif not a.reuse:
        meta_file.write_text(json.dumps(meta))
    meta.update(misses=misses, trace_pngs=trace_pngs)
    verdict = write_report(rows, meta, a.out)
    # Only real measuring runs (20 s, not rebuilt from kept runs) go to the detector notes.
    if misses and not a.reuse and a.seconds == 20:
        NOTES.parent.mkdir(exist_ok=True)
        with open(NOTES, "a") as fh:
            fh.write(f"\n## path-lab: bench-quick misses, {meta['date']} ({meta['command']})\n\n")
            fh.write("\n".join(misses) + "\n")
    print(f"\nwrote {a.out / 'report-quick.md'} and .csv in {meta['wall_s'] / 60:.1f} min; "
          f"targets: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
