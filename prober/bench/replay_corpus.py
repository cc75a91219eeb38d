#!/usr/bin/env python3
"""Judge the quick window on paths it was not tuned on, without sending a byte each time.

    replay_corpus.py collect --seed 7 --paths 26 --runs 2 --out test-artifacts/corpus
    replay_corpus.py summarise test-artifacts/corpus test-artifacts/bench-quick
    replay_corpus.py summarise prober/bench/runs --replay-args "-M 3000 -T 5"

`collect` draws random paths (rate, RTT, buffer, random loss, jitter, on/off cross traffic,
congestion control, streams; seeded, not bench-quick's matrix), brings up a lab for each
and records `--runs` validate runs of 20 s (JSON Lines with every sample and the run's own
20 s figure). `summarise` replays every recorded validate run through the current
`prober/build/qwreplay` (`make -C prober replay`: src/quickwin.c fed exactly as the prober
feeds it; gzipped runs, as bench-quick keeps them in prober/bench/runs, too; --replay-args
sets the estimator's settings, see qwreplay's usage) and prints, per path, each run's paired
error (c = converged, d = answered at the deadline, f = fell back; * = the interval missed
the run's own 20 s figure), when the window closed, its half-width and what held it open,
then per cc the median / p90 / p95 |error|, how many converged, the coverage, the median
half-width and which evidence bounded the intervals.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import gzip
import random
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "prober" / "bench"))
sys.path.insert(0, str(ROOT / "prober" / "lab"))
import bench_quick as bq  # noqa: E402
import labctl  # noqa: E402

REPLAY = ROOT / "prober" / "build" / "qwreplay"


def draw_row(rng: random.Random, mtu: int = 9000, bottleneck: str = "delayline") -> bq.Row:
    """One random path and flow (tiny per-stream windows get one stream). At a standard
    Ethernet MTU the rates stop at 150 Mbit/s: the userspace delay line's packet rate, not
    the path, would set the result above that. A kernel bottleneck (tbf, htb) has no cross
    traffic (the delay line's source cannot share the kernel's queue): the same seed draws
    the same paths with it left out."""
    rates = [5, 20, 50, 100, 150, 250, 400] if mtu >= 9000 else [5, 20, 50, 100, 150]
    rate = rng.choice(rates)
    rtt = rng.choice([8, 15, 30, 60, 90, 130, 180])
    queue = rng.choice([0.3, 0.6, 1.0, 1.5, 2.5])
    loss = rng.choice([0, 0, 0, 5e-5, 3e-4, 2e-3])
    jitter = rng.choice([None, None, None, ("uniform", 1.0), ("normal", 3.0)])
    cross = rng.choice([None, None, None, None, (0.2, 300, 300), (0.4, 2000, 3000)])
    cc = rng.choice(["reno", "cubic", "bbr", "cubic", "bbr"])
    streams = rng.choice([1, 1, 2, 4, 8])
    if rate * rtt / 8e3 / streams < 0.02:
        streams = 1
    if bottleneck != "delayline":
        cross = None
    path = bq._custom(rate, rtt, queue, loss=loss, jitter=jitter, cross=cross)
    if mtu != path.mtu:
        path = dataclasses.replace(path, mtu=mtu, name=f"{path.name}-m{mtu}")
    if bottleneck != "delayline":
        path = dataclasses.replace(path, bottleneck=bottleneck, name=f"{path.name}-k{bottleneck}")
    return bq.Row(path, cc, streams)


def collect(a) -> int:
    reason = labctl.lab_unavailable_reason()
    if reason:
        raise SystemExit(f"replay_corpus: {reason}")
    bq.PROBER = a.prober.resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(a.seed)
    t0 = time.monotonic()
    for i in range(a.paths):
        row = draw_row(rng, a.mtu, a.bottleneck)
        rid = f"s{a.seed}-{i:02d}-{row.id}"
        with labctl.Lab(row.path, log_dir=a.out) as lab:
            for k in range(a.runs):
                bq.run_prober(lab, row, "validate", 20, a.out / f"{rid}.validate{k}.jsonl")
                time.sleep(0.3)
        print(f"[{i + 1}/{a.paths} {time.monotonic() - t0:5.0f}s] {rid}", flush=True)
    return 0


def replay(dirs, args=()) -> list[dict]:
    """Every validate run in dirs (*.validate*.jsonl, or .jsonl.gz as bench-quick keeps them)
    replayed through qwreplay with args: one dict per run, qwreplay's columns."""
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for d in dirs:
            files += [str(f) for f in Path(d).glob("*.validate*.jsonl")]
            for gz in Path(d).glob("*.validate*.jsonl.gz"):
                f = Path(tmp) / gz.name[: -len(".gz")]
                f.write_bytes(gzip.decompress(gz.read_bytes()))
                files.append(str(f))
        if not files:
            raise SystemExit("replay_corpus: no *.validate*.jsonl[.gz] in " + ", ".join(map(str, dirs)))
        out = subprocess.run([str(REPLAY), *args, *sorted(files)], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    return [dict(zip(lines[0].split("\t"), line.split("\t"))) for line in lines[1:]]


def summarise(a) -> int:
    runs = replay(a.dirs, shlex.split(a.replay_args))
    by_row, by_cc = collections.defaultdict(list), collections.defaultdict(list)
    for r in runs:
        by_row[re.sub(r"\.validate\d+\.jsonl$", "", r["run"])].append(r)
        by_cc[r["cc"]].append(r)
    # c: converged, d: answered at the deadline, f: fell back (--until-converged); * the
    # interval missed the run's own figure
    for row, rs in by_row.items():
        cells = [
            f"{float(r['err_pct']):+5.1f}{'c' if r['converged'] == '1' else 'd' if r['answered'] == '1' else 'f'}"
            f"@{float(r['end_t']):4.1f}s±{float(r['ci_pct']):.1f}{'' if r['covered'] == '1' else '*'}"
            f"{'' if r['converged'] == '1' else ' ' + r['hold']}"
            for r in rs
        ]
        print(f"{row:46s} " + "  ".join(cells))
    for cc, rs in sorted(by_cc.items()):
        err = [abs(float(r["err_pct"])) for r in rs]
        conv = [r for r in rs if r["converged"] == "1"]
        covered = sum(r["covered"] == "1" for r in rs)
        width = [float(r["ci_pct"]) for r in rs if r["answered"] == "1"]
        print(
            f"{cc:5s} runs {len(rs):3d}  |err| median {statistics.median(err):.2f} p90 "
            f"{bq.percentile(err, 90):.2f} p95 {bq.percentile(err, 95):.2f} max {max(err):.2f} %  "
            f"converged {len(conv)}/{len(rs)}  covered {covered}/{len(rs)}  "
            f"half-width median {statistics.median(width) if width else float('nan'):.1f} %"
        )
        held = collections.Counter(r["hold"] for r in rs if r["converged"] != "1")
        if held:
            print("      not converged, held open by: " + ", ".join(f"{k} {v}" for k, v in held.most_common()))
        bound = collections.Counter(r["bound_by"] for r in rs if r["answered"] == "1")
        print("      interval bounded by: " + ", ".join(f"{k} {v}" for k, v in bound.most_common()))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="record validate runs over random paths")
    c.add_argument("--seed", type=int, default=7)
    c.add_argument("--paths", type=int, default=26)
    c.add_argument("--runs", type=int, default=2)
    c.add_argument("--out", type=Path, default=ROOT / "test-artifacts" / "corpus")
    c.add_argument("--prober", type=Path, default=bq.QUICKPROBE)
    c.add_argument("--mtu", type=int, default=9000, help="the lab's MTU (default 9000; 1500: standard Ethernet)")
    c.add_argument(
        "--bottleneck",
        choices=labctl.BOTTLENECKS,
        default="delayline",
        help="the data direction's bottleneck: the delay line's (default) or the kernel's tbf / htb",
    )
    s = sub.add_parser("summarise", help="replay recorded validate runs through qwreplay")
    s.add_argument("dirs", nargs="+", type=Path)
    s.add_argument("--replay-args", default="", help='qwreplay\'s options, e.g. "-M 3000 -T 5"')
    a = ap.parse_args(argv)
    return collect(a) if a.cmd == "collect" else summarise(a)


if __name__ == "__main__":
    sys.exit(main())
