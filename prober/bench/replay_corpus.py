#!/usr/bin/env python3
"""Judge the quick window on paths it was not tuned on, without sending a byte each time.

    replay_corpus.py collect --seed 7 --paths 26 --runs 2 --out test-artifacts/corpus
    replay_corpus.py collect --seed 31 --paths 24 --mtu 1500 --aqm codel --out test-artifacts/codel
    replay_corpus.py collect --seed 33 --paths 24 --mtu 1500 --policer --out test-artifacts/police
    replay_corpus.py collect --seed 35 --paths 24 --mtu 1500 --jitter-order netem --out test-artifacts/reorder
    replay_corpus.py collect --seed 89 --paths 16 --server-rmem 6291456 --out test-artifacts/stock
    replay_corpus.py collect --seed 201 --paths 6 --mtu 1500 --aqm codel --cc bbr --streams 2,4,8 --out test-artifacts/codel-bbr
    replay_corpus.py collect --seed 401 --paths 16 --mtu 1500 --slot 1,6 --out test-artifacts/slot
    replay_corpus.py collect --seed 641 --paths 8 --mtu 1500 --ack-ratio 50 --out test-artifacts/asym
    replay_corpus.py collect --seed 645 --paths 8 --mtu 1500 --ack-ratio 10 --ack-cross 0.9,2000,3000
    replay_corpus.py summarise test-artifacts/corpus test-artifacts/bench-quick
    replay_corpus.py summarise prober/bench/runs --replay-args "-M 3000 -T 5"
    replay_corpus.py summarise prober/bench/full/runs --replay-args=-S
    replay_corpus.py calibrate --fit prober/bench/full/runs --check prober/bench/runs
    replay_corpus.py compare --before /tmp/qwreplay.before -v prober/bench/runs prober/bench/full/runs
    replay_corpus.py compare --before prober/build/qwreplay --before-args "-M 3000" prober/bench/runs
    replay_corpus.py compete --out test-artifacts/compete
    replay_corpus.py compete --seed 741 --paths 6 --aqm codel --out test-artifacts/compete-codel
    replay_corpus.py compete --seed 753 --paths 6 --cc bbr --other cubic --out test-artifacts/compete-bbr
    replay_corpus.py compete --seed 757 --paths 6 --policer --out test-artifacts/compete-police
    replay_corpus.py compete --seed 851 --paths 6 --arrive 2 --out test-artifacts/compete-arrive

`collect` draws random paths (rate, RTT, buffer, random loss, jitter, on/off cross traffic,
congestion control, streams; seeded, not bench-quick's matrix), brings up a lab for each and
records `--runs` validate runs of 20 s (JSON Lines with every sample and the run's own 20 s
figure); `compete` records them on a few fixed paths (or, with --seed, paths it draws) against
a competing long-lived TCP flow of another iperf3 client (--cc / --other force either flow's
congestion control on the drawn paths; --aqm, --policer and --bottleneck build the path as
`collect`'s do; --arrive S starts the other flow S seconds into each run instead, so the
window sees it come). `summarise` replays every recorded validate run through the current
`prober/build/qwreplay` (`make -C prober replay`: src/quickwin.c fed exactly as the prober
feeds it; gzipped runs, as bench-quick keeps them in prober/bench/runs, too; --replay-args
sets the estimator's settings, see qwreplay's usage; -S ends slow-start where this build's
detector does on the samples, to judge a detector change) and prints, per path, each run's
paired error (c = converged, d = answered at the deadline, f = fell back; * = the interval
missed the run's own 20 s figure), when the window closed, its half-width and what held it
open, then per cc the median / p90 / p95 |error|, how many converged, the coverage, the median
half-width and which evidence bounded the intervals, and last one line over every run (the
figures a table of held-out draws gives: coverage, converged windows and how many missed, the
half-widths' median and p90, when the windows closed and how many after their due time).
`calibrate` scores every run's miss (how far its own 20 s figure fell outside, in units of the
interval's side: covered at <= 1), takes per evidence class the split-conformal 95 % quantile
of the scores on the --fit runs (widening that class's intervals by it, if above 1, covers a
new run of the class at 95 % under whatever stopping rule the runs were answered by) and shows
the coverage, before and after that scale, on the --check runs: paths it was not fitted on.
`compare` judges an estimator change: it replays the runs through a qwreplay built before the
change (--before, copied aside before rebuilding) and through this build, and prints each run
whose answer, interval, coverage, convergence, evidence, hold or close moved, then how many
moved and the coverage before and after; with -v, also how many runs replay byte-identically
with qwreplay -v (every planned check), the test a change must pass to keep the bench's
figures (MANIFEST.json's replays_identically). With --before this build and --before-args, it
compares two settings (a deadline of 3 s against the default, say).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
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


def draw_row(
    rng: random.Random,
    mtu: int = 9000,
    bottleneck: str = "delayline",
    aqm: str = "none",
    policer: bool = False,
    jitter_order: str = "fifo",
    cc_only: str | None = None,
    streams_from: tuple[int, ...] = (),
    slot_ms: tuple[float, float] | None = None,
    loss_from: tuple[float, ...] = (),
    ack_ratio: float = 0,
    ack_cross: tuple[float, float, float] | None = None,
    rtt_from: tuple[float, ...] = (),
) -> bq.Row:
    """One random path and flow (tiny per-stream windows get one stream). At a standard
    Ethernet MTU the rates stop at 150 Mbit/s: the userspace delay line's packet rate, not
    the path, would set the result above that. A kernel bottleneck (tbf, htb) has no cross
    traffic (the delay line's source cannot share the kernel's queue): the same seed draws
    the same paths with it left out. Under an AQM (codel, pie) the buffer is 4 BDP whatever
    was drawn, as where one is deployed (fq_codel's limit is 10,240 packets, sch_pie's
    1,000): the AQM, not the buffer's top, sets where the flow meets loss; the same seed
    draws the same paths. A
    policer is the kernel's tbf with a bucket of POLICER_BURST_MS at the rate and a queue of
    two packets: what exceeds the bucket is dropped, nothing waits. With jitter_order netem
    every path has jitter (the draw's, or uniform +-2 ms where it drew none: netem's default
    distribution) and each packet keeps its own draw, reordering a bulk flow as netem does.
    cc_only replaces the drawn congestion control; streams_from, when given, draws the number
    of streams from it after the path (as asked, even where each stream's window is tiny): one
    more draw a path, so a seed's paths after the first are not those it draws without;
    loss_from, when given, draws each path's random loss from it the same way, after the
    streams (a corpus of lossy paths, where the draw's loss is 0 on half of them). rtt_from,
    when given, draws each path's round trip (ms) from it, after the loss: the draw's longest
    is 180 ms, and a new user's intercontinental or satellite path may be 250-600 ms.
    slot_ms (min, max) adds netem's slots both ways, Wi-Fi-like aggregation: a packet due
    with no slot open waits for the next, a gap uniform in that range later, no budget per
    slot; FIFO jitter order only (labctl refuses netem order with slots). ack_ratio N, when
    given, makes the path asymmetric, as a cable modem's or DSL line's upstream carries the
    site's ACKs: the ACK direction at the rate / N, with a drop-tail buffer of ACK_BUFFER_MS at
    that rate (at least 3 packets of the MTU); no draw is added, so a seed draws the same
    paths with it. ack_cross (share, on ms, off ms), when given, adds open-loop cross traffic
    in the ACK direction, that share of its rate while on: the site's own uploads sharing its
    upstream with the ACKs (no draw added either)."""
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
    if streams_from:
        streams = rng.choice(streams_from)
    if loss_from:
        loss = rng.choice(loss_from)
    if rtt_from:
        rtt = rng.choice(rtt_from)
    cc = cc_only or cc
    if bottleneck != "delayline":
        cross = None
    if aqm != "none":
        queue = 4.0
    if policer:
        bottleneck, cross = "tbf", None
    if jitter_order != "fifo" and jitter is None:
        jitter = ("uniform", 2.0)
    path = bq._custom(rate, rtt, queue, loss=loss, jitter=jitter, cross=cross)
    if mtu != path.mtu:
        path = dataclasses.replace(path, mtu=mtu, name=f"{path.name}-m{mtu}")
    if bottleneck != "delayline":
        path = dataclasses.replace(path, bottleneck=bottleneck, name=f"{path.name}-k{bottleneck}")
    if aqm != "none":
        path = dataclasses.replace(path, aqm=aqm, name=f"{path.name}-{aqm}")
    if jitter_order != "fifo":
        path = dataclasses.replace(path, jitter_order=jitter_order, name=f"{path.name}-{jitter_order}")
    if policer:
        path = _policed(path)
    if slot_ms:
        lo, hi = slot_ms
        path = dataclasses.replace(path, slot_min_ms=lo, slot_max_ms=hi, name=f"{path.name}-slot{lo:g}-{hi:g}")
    if ack_ratio:
        ack_mbps = rate / ack_ratio
        ack_queue = max(3 * mtu, int(ack_mbps * 1e6 / 8 * ACK_BUFFER_MS / 1e3))
        name = f"{path.name}-ack{ack_mbps:g}"
        path = dataclasses.replace(path, ack_rate_mbps=ack_mbps, ack_queue_bytes=ack_queue, name=name)
    if ack_cross:
        share, on_ms, off_ms = ack_cross
        ack_mbps = (path.ack_rate_mbps or rate) * share
        name = f"{path.name}-ackx{share:g}"
        path = dataclasses.replace(
            path, ack_cross_mbps=ack_mbps, ack_cross_on_ms=on_ms, ack_cross_off_ms=off_ms, name=name
        )
    return bq.Row(path, cc, streams)


# A policer's bucket: Juniper's guidance is 5 ms at the rate, Cisco's default Bc 31 ms
# (CIR / 32); 10 ms sits between.
POLICER_BURST_MS = 10.0


def _policed(path: labctl.PathSpec) -> labctl.PathSpec:
    """path (on the kernel's tbf) as a policer: a POLICER_BURST_MS bucket at the rate and a
    queue of two packets, so that what exceeds the bucket is dropped and nothing waits."""
    name = re.sub(r"-q[0-9.]+", "", path.name) + f"-police{POLICER_BURST_MS:g}ms"
    return dataclasses.replace(path, queue_bytes=2 * path.mtu, burst_ms=POLICER_BURST_MS, name=name)


def _path_kind_args(parser: argparse.ArgumentParser) -> None:
    """The bottleneck options collect and compete share: a kernel bottleneck, a policer, or an
    AQM at the delay line's."""
    parser.add_argument(
        "--bottleneck",
        choices=labctl.BOTTLENECKS,
        default="delayline",
        help="the data direction's bottleneck: the delay line's (default) or the kernel's tbf / htb",
    )
    parser.add_argument(
        "--policer",
        action="store_true",
        help=f"the kernel's tbf as a policer: a {POLICER_BURST_MS:g} ms bucket, a queue of two packets",
    )
    parser.add_argument(
        "--aqm",
        choices=labctl.AQMS,
        default="none",
        help="active queue management at the delay line's bottleneck (codel or pie: a 4-BDP buffer)",
    )


# An access link's upstream buffer, in time at its rate: cable modems and DSL lines hold
# 100 ms or more (bufferbloat's measurements saw 100 ms to seconds); 100 ms is the low end.
ACK_BUFFER_MS = 100.0


def _ready_to_record(a) -> None:
    """Stop with the reason if no lab can run here; else record with a.prober into a.out."""
    reason = labctl.lab_unavailable_reason()
    if reason:
        raise SystemExit(f"replay_corpus: {reason}")
    bq.PROBER = a.prober.resolve()
    a.out.mkdir(parents=True, exist_ok=True)


def _server_rmem(lab, top: int) -> None:
    """Cap the site's receive buffers at top bytes (tcp_rmem[2], per namespace; the lab raises
    it to 32 MB): a stock Linux server has 6 MB (6291456). The server is already listening;
    the kernel reads the sysctl for each connection it accepts."""
    argv = ["sysctl", "-q", "-w", f"net.ipv4.tcp_rmem=4096 131072 {top}"]
    done = lab.run(argv, where="far", timeout=10, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"replay_corpus: {' '.join(argv)} failed in the site's namespace: {done.stderr}")


def collect(a) -> int:
    _ready_to_record(a)
    rng = random.Random(a.seed)
    t0 = time.monotonic()
    for i in range(a.paths):
        row = draw_row(
            rng,
            a.mtu,
            a.bottleneck,
            a.aqm,
            a.policer,
            a.jitter_order,
            a.cc,
            a.streams,
            a.slot,
            a.loss,
            a.ack_ratio,
            a.ack_cross,
            a.rtt,
        )
        rid = f"s{a.seed}-{i:02d}-{row.id}"
        with labctl.Lab(row.path, log_dir=a.out) as lab:
            if a.server_rmem:
                _server_rmem(lab, a.server_rmem)
            for k in range(a.runs):
                bq.run_prober(lab, row, "validate", 20, a.out / f"{rid}.validate{k}.jsonl")
                time.sleep(0.3)
        print(f"[{i + 1}/{a.paths} {time.monotonic() - t0:5.0f}s] {rid}", flush=True)
    return 0


# A competing long-lived TCP flow of its own (an iperf3 client to a second server in the far
# namespace, started COMPETE_HEAD_S before the runs): (rate, rtt, queue x BDP, mtu, the
# prober's cc, the competitor's cc). The bench never has one; the share between the flows
# moves for tens of seconds after a new one starts.
COMPETE_PATHS = [
    (100, 40, 1.0, 1500, "bbr", "cubic"),
    (100, 40, 1.0, 1500, "cubic", "cubic"),
    (50, 60, 2.0, 1500, "reno", "cubic"),
    (100, 20, 0.5, 9000, "bbr", "bbr"),
    (150, 30, 1.0, 1500, "cubic", "bbr"),
]
COMPETE_PORT = 5302
COMPETE_HEAD_S = 6.0


def draw_compete(rng: random.Random) -> tuple[float, float, float, int, str, str]:
    """One random competing-flow path, as COMPETE_PATHS spells them: 1500-byte frames (the
    internet's, and the delay line's packet rate caps them at 150 Mbit/s), the prober's and
    the competitor's congestion control drawn alike from Linux's three, CUBIC and BBR twice
    as often (the default and the one deployed at scale). No random loss, jitter or cross
    traffic: the other flow is the disturbance this draw is for."""
    rate = rng.choice([20, 50, 100, 150])
    rtt = rng.choice([8, 15, 30, 60, 90, 130])
    queue = rng.choice([0.5, 1.0, 1.5, 2.5])
    ccs = ["reno", "cubic", "bbr", "cubic", "bbr"]
    return rate, rtt, queue, 1500, rng.choice(ccs), rng.choice(ccs)


def compete_paths(
    seed: int | None, paths: int, cc: str | None = None, other: str | None = None
) -> list[tuple[float, float, float, int, str, str]]:
    """The paths compete records: COMPETE_PATHS, or with a seed, paths drawn by draw_compete.
    cc / other force the prober's / the competitor's congestion control on every path; the
    draw is made as without them, so the paths are the seed's own."""
    if seed is None:
        drawn = list(COMPETE_PATHS)
    else:
        rng = random.Random(seed)
        drawn = [draw_compete(rng) for _ in range(paths)]
    return [(r, t, q, m, cc or c, other or o) for r, t, q, m, c, o in drawn]


def compete_row(
    rate, rtt, queue, mtu, cc, aqm: str = "none", bottleneck: str = "delayline", policer: bool = False
) -> bq.Row:
    """The prober's row on a compete path, built as draw_row builds its paths: under an AQM
    the buffer is 4 BDP; a kernel bottleneck (tbf, htb) keeps the drawn buffer; a policer is
    the kernel's tbf with a POLICER_BURST_MS bucket and a queue of two packets."""
    path = bq._custom(rate, rtt, 4.0 if aqm != "none" else queue, mtu=mtu)
    if aqm != "none":
        path = dataclasses.replace(path, aqm=aqm, name=f"{path.name}-{aqm}")
    if policer:
        bottleneck = "tbf"
    if bottleneck != "delayline":
        path = dataclasses.replace(path, bottleneck=bottleneck, name=f"{path.name}-k{bottleneck}")
    if policer:
        path = _policed(path)
    return bq.Row(path, cc, 1)


def competitor(far_addr: str, other: str, seconds: float) -> list[str]:
    """argv of the competing long-lived flow: an iperf3 client for seconds with cc other."""
    return ["iperf3", "-c", far_addr, "-p", str(COMPETE_PORT), "-t", f"{seconds:.0f}", "-C", other]


def arriving_competitor(far_addr: str, other: str, arrive_s: float, run_s: int = 20) -> list[str]:
    """argv of a competitor that starts arrive_s seconds after it is launched (launched as a
    run begins: inside the run's window when arrive_s is a few seconds) and outlasts the run."""
    iperf = shlex.join(competitor(far_addr, other, run_s - arrive_s + 5))
    return ["sh", "-c", f"sleep {arrive_s:g}; exec {iperf}"]


def compete(a) -> int:
    _ready_to_record(a)
    for rate, rtt, queue, mtu, cc, other in compete_paths(a.seed, a.paths, a.cc, a.other):
        row = compete_row(rate, rtt, queue, mtu, cc, a.aqm, a.bottleneck, a.policer)
        rid = f"{row.id}-vs-{other}" if a.seed is None else f"c{a.seed}-{row.id}-vs-{other}"
        if a.arrive is not None:
            rid += f"-at{a.arrive:g}s"
        with labctl.Lab(row.path, log_dir=a.out) as lab:
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            lab.popen(["iperf3", "-s", "-p", str(COMPETE_PORT)], where="far", **quiet)
            time.sleep(0.5)
            if a.arrive is None:
                # the competitor outlives every run; the lab kills it on the way out
                lab.popen(competitor(lab.far_addr, other, COMPETE_HEAD_S + a.runs * 25 + 10), **quiet)
                time.sleep(COMPETE_HEAD_S)
            for k in range(a.runs):
                arriving = None
                if a.arrive is not None:
                    arriving = lab.popen(arriving_competitor(lab.far_addr, other, a.arrive), **quiet)
                bq.run_prober(lab, row, "validate", 20, a.out / f"{rid}.validate{k}.jsonl")
                if arriving is not None:
                    # it ends 5 s after the run: the next run starts on an idle path
                    arriving.wait(timeout=60)
                time.sleep(1)
        print(rid, flush=True)
    return 0


@contextlib.contextmanager
def validate_files(dirs):
    """The validate runs in dirs (*.validate*.jsonl, and .jsonl.gz as bench-quick keeps them,
    unpacked to a temporary directory that lasts the with block), sorted."""
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
        yield sorted(files)


def replay(dirs, args=(), binary=None) -> list[dict]:
    """Every validate run in dirs (validate_files) replayed through qwreplay (binary, else this
    build's) with args: one dict per run, qwreplay's columns."""
    with validate_files(dirs) as files:
        argv = [str(binary or REPLAY), *args, *files]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    return [dict(zip(lines[0].split("\t"), line.split("\t"))) for line in lines[1:]]


# What a change to the estimator may move in a run (qwreplay's columns), in the order compare
# reports them.
COMPARED = ("pred_mbps", "lo_mbps", "hi_mbps", "covered", "converged", "bound_by", "hold", "close_t")


def verbose_identical(dirs, before: Path, before_args, after_args) -> tuple[int, int]:
    """How many validate runs in dirs replay with -v (every planned check, stdout and stderr)
    byte-identically through before and this build; and how many runs there are."""
    same = 0
    with validate_files(dirs) as files:
        for f in files:
            a, b = (
                subprocess.run([str(x), "-v", *args, f], capture_output=True, text=True, check=True)
                for x, args in ((before, before_args), (REPLAY, after_args))
            )
            same += (a.stdout, a.stderr) == (b.stdout, b.stderr)
        return same, len(files)


def compare(a) -> int:
    """Replay the runs in a.dirs through a.before (a qwreplay built before an estimator change,
    with --before-args) and this build (with --replay-args): each run that moved, then how
    many moved, the coverage before and after, and how many replay byte-identically with -v."""
    before_args, after_args = shlex.split(a.before_args), shlex.split(a.replay_args)
    # a run is named by its file, and two directories may hold the same name (the default and
    # large matrices' rows): key by both
    old = {(str(d), r["run"]): r for d in a.dirs for r in replay([d], before_args, a.before)}
    new = {(str(d), r["run"]): r for d in a.dirs for r in replay([d], after_args)}
    moved, gained, lost = [], [], []
    for key in sorted(old):
        x, y = old[key], new[key]
        changes = [f"{k} {x[k]} -> {y[k]}" for k in COMPARED if x[k] != y[k]]
        if changes:
            moved.append(key)
            print(f"{key[0]}/{key[1]}: figure {float(x['truth_mbps']):.3f}; " + ", ".join(changes))
        if x["covered"] != y["covered"]:
            (gained if y["covered"] == "1" else lost).append(key)
    covered = [sum(r["covered"] == "1" for r in runs.values()) for runs in (old, new)]
    print(
        f"runs {len(old)}: {len(moved)} moved; covered {covered[0]} -> {covered[1]} "
        f"(gained {len(gained)}, lost {len(lost)})"
    )
    if a.verbose:
        same, n = verbose_identical(a.dirs, a.before, before_args, after_args)
        print(f"-v output byte-identical on {same} of {n}")
    return 0


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
        closed = [r for r in rs if float(r["close_t"]) >= 0]
        if closed:
            late = [r for r in closed if drain_past_due(r)]
            drains = [float(r["drain_s"]) for r in closed if float(r["drain_s"]) >= 0]
            print(
                f"      drain after the close (the recorded sender went on writing): median "
                f"{statistics.median(drains) if drains else float('nan'):.2f} s; past the due time "
                f"{len(late)} of {len(closed)}" + (": " + ", ".join(r["run"] for r in late) if late else "")
            )
    print(draw_totals(runs))
    return 0


def draw_totals(runs: list[dict]) -> str:
    """One line over every run of a draw, the figures a note's table of held-out draws gives:
    coverage, converged windows and how many of them missed, the half-widths' median and p90,
    and when the windows closed (seconds from the run's start) with how many closed after
    their due time."""
    conv = [r for r in runs if r["converged"] == "1"]
    covered = sum(r["covered"] == "1" for r in runs)
    width = [float(r["ci_pct"]) for r in runs if r["answered"] == "1"]
    closed = [(float(r["close_t"]), float(r["due_t"])) for r in runs if float(r["close_t"]) >= 0]
    late = sum(close > due + 1e-9 for close, due in closed)
    widths = f"{statistics.median(width):.1f} / {bq.percentile(width, 90):.1f} %" if width else "-"
    closes = f"{min(closed)[0]:.2f}-{max(closed)[0]:.2f} s" if closed else "-"
    return (
        f"all   runs {len(runs):3d}  covered {covered}/{len(runs)}  converged {len(conv)} "
        f"(missed {sum(r['covered'] != '1' for r in conv)})  half-width median / p90 {widths}  "
        f"windows closed {closes}, after their due time {late}"
    )


def drain_past_due(r: dict) -> bool:
    """1 if a closed window's drain (qwreplay's drain_s after close_t, as the run's own samples
    show it) ends after its due time, where a quick run cuts it and the server's byte count
    falls short; one the samples never show done counts as past. Read at the samples, the
    drain may have ended up to one sampling period (the run's --sample-ms, qwreplay's
    sample_s) sooner: within that it is not past."""
    drain = float(r["drain_s"])
    return drain < 0 or float(r["close_t"]) + drain - float(r["sample_s"]) > float(r["due_t"]) + 1e-9


def miss_score(r: dict) -> float:
    """How far the run's own 20 s figure fell from the answer, in units of the interval's
    side it fell on: at most 1 when the interval held it (qwreplay's covered), 2 when it
    fell twice as far out as that side reached."""
    truth, fig, lo, hi = (float(r[k]) for k in ("truth_mbps", "figure_mbps", "lo_mbps", "hi_mbps"))
    if truth >= fig:
        return (truth - fig) / (hi - fig) if hi > fig else (0.0 if truth == fig else float("inf"))
    return (fig - truth) / (fig - lo) if fig > lo else float("inf")


def conformal_quantile(scores: list[float], level: float = 0.95) -> float:
    """Split-conformal quantile: the ceil(level x (n + 1))-th smallest score, inf when the
    runs are too few for that level. Widening a class's intervals by it (about the answer)
    covers a new run of the same class with probability >= level, whatever the stopping rule
    the runs were answered under, so long as the new run is exchangeable with them."""
    k = -(-level * (len(scores) + 1) // 1)
    return sorted(scores)[int(k) - 1] if 0 < k <= len(scores) else float("inf")


def calibrate(a) -> int:
    fit = replay(a.fit, shlex.split(a.replay_args))
    checks = {str(d): replay([d], shlex.split(a.replay_args)) for d in a.check}

    def key(r):
        return f"{r['bound_by']}/{r['cc']}" if a.split_cc else r["bound_by"]

    classes = sorted({key(r) for r in fit + [r for rs in checks.values() for r in rs]})
    print(f"fitted on {', '.join(map(str, a.fit))} ({len(fit)} runs), level {a.level:.2f}")
    head = f"{'evidence':18s} {'fit n':>5s} {'missed':>6s} {'q':>6s} {'scale':>5s}"
    for d in checks:
        head += f" | {Path(d).name[:18]:>18s}: n, covered raw -> scaled"
    print(head)
    for cls in classes:
        sc = [miss_score(r) for r in fit if key(r) == cls]
        q = conformal_quantile(sc, a.level)
        # too few runs of the class to calibrate at this level: its intervals stay as built
        scale = max(1.0, q) if q != float("inf") else 1.0
        shown = f"{q:6.2f} {scale:5.2f}" if q != float("inf") else f"{'-':>6s} {'-':>5s}"
        line = f"{cls:18s} {len(sc):5d} {sum(x > 1 for x in sc):6d} {shown}"
        for rs in checks.values():
            cs = [miss_score(r) for r in rs if key(r) == cls]
            raw, scaled = sum(x <= 1 for x in cs), sum(x <= scale for x in cs)
            line += f" | {len(cs):18d}: {raw:3d} -> {scaled:3d}" + " " * 8
        print(line.rstrip())
    return 0


def _comma_list(text: str, kind, ok, wanted: str) -> tuple:
    """Comma-separated values of kind, each ok; else an argparse error saying what is wanted."""
    try:
        values = tuple(kind(x) for x in text.split(","))
    except ValueError:
        values = ()
    if not values or not all(ok(v) for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: {wanted}")
    return values


def _stream_counts(text: str) -> tuple[int, ...]:
    """--streams: comma-separated stream counts, each 1 to 128 (the prober's -P)."""
    return _comma_list(
        text, int, lambda n: 1 <= n <= 128, "give stream counts from 1 to 128, comma-separated, e.g. 2,4,8"
    )


def _loss_rates(text: str) -> tuple[float, ...]:
    """--loss: comma-separated loss probabilities per packet, each in [0, 0.1]."""
    return _comma_list(
        text,
        float,
        lambda p: 0 <= p <= 0.1,
        "give loss probabilities per packet from 0 to 0.1, comma-separated, e.g. 3e-4,1e-3,2e-3",
    )


def _rtts_ms(text: str) -> tuple[float, ...]:
    """--rtt: comma-separated round trips in ms, each 1 to 1000 (the draw's go to 180)."""
    return _comma_list(
        text,
        float,
        lambda ms: 1 <= ms <= 1000,
        "give round trips in ms from 1 to 1000, comma-separated, e.g. 220,250,300",
    )


def _slot_ms(text: str) -> tuple[float, float]:
    """--slot: MIN,MAX in ms, 0 <= MIN <= MAX <= 1000, MAX above 0."""
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        lo = hi = -1.0
    if not (0 <= lo <= hi <= 1000 and hi > 0):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give the slot gap as MIN,MAX in ms, 0 <= MIN <= MAX <= 1000, e.g. 1,6"
        )
    return lo, hi


def _ack_ratio(text: str) -> float:
    """--ack-ratio: N from 1 to 1000, the data direction's rate over the ACK direction's."""
    try:
        n = float(text)
    except ValueError:
        n = -1
    if not (1 <= n <= 1000):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give the rate over the ACK direction's as a number from 1 to 1000, e.g. 50"
        )
    return n


def _ack_cross(text: str) -> tuple[float, float, float]:
    """--ack-cross: SHARE,ON_MS,OFF_MS, 0 < SHARE < 1, ON from 1 ms to 1 h, OFF up to 1 h."""
    try:
        share, on_ms, off_ms = (float(x) for x in text.split(","))
    except ValueError:
        share = on_ms = off_ms = -1.0
    if not (0 < share < 1 and 1 <= on_ms <= 3.6e6 and 0 <= off_ms <= 3.6e6):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give the ACK direction's cross traffic as SHARE,ON_MS,OFF_MS "
            "(0 < SHARE < 1 of its rate, ON 1-3600000, OFF 0-3600000), e.g. 0.6,2000,3000"
        )
    return share, on_ms, off_ms


def _arrive_s(text: str) -> float:
    """--arrive: seconds into each 20 s run, 0.5 to 15 (the window measures in its first few)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.5 <= value <= 15:
        raise argparse.ArgumentTypeError(f"{text!r}: give the seconds into each run, 0.5 to 15, e.g. 2")
    return value


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
    _path_kind_args(c)
    c.add_argument(
        "--server-rmem",
        type=int,
        default=0,
        help="the site's tcp_rmem[2] in bytes (default: the lab's 32 MB; 6291456: a stock Linux server)",
    )
    c.add_argument(
        "--jitter-order",
        choices=labctl.JITTER_ORDERS,
        default="fifo",
        help="netem: jitter on every path, each packet its own draw (reordering, as netem does)",
    )
    c.add_argument("--cc", choices=bq.CCS, help="every path with this congestion control")
    c.add_argument(
        "--streams",
        type=_stream_counts,
        default=(),
        help="draw each path's streams from these counts, e.g. 2,4,8 (default: the draw's 1, 1, 2, 4, 8)",
    )
    c.add_argument(
        "--loss",
        type=_loss_rates,
        default=(),
        help="draw each path's random loss from these rates, e.g. 3e-4,1e-3,2e-3 (default: the draw's 0, 0, 0, 5e-5, 3e-4, 2e-3)",
    )
    c.add_argument(
        "--rtt",
        type=_rtts_ms,
        default=(),
        help="draw each path's round trip from these, in ms, e.g. 220,250,300 (default: the draw's 8-180 ms)",
    )
    c.add_argument(
        "--slot",
        type=_slot_ms,
        help="netem's slots both ways (Wi-Fi-like aggregation): the gap before a slot as MIN,MAX ms, e.g. 1,6",
    )
    c.add_argument(
        "--ack-ratio",
        type=_ack_ratio,
        default=0,
        help=f"asymmetric paths: the ACK direction at the rate / N with a {ACK_BUFFER_MS:g} ms buffer, e.g. 50",
    )
    c.add_argument(
        "--ack-cross",
        type=_ack_cross,
        help="cross traffic in the ACK direction as SHARE,ON_MS,OFF_MS of its rate, e.g. 0.6,2000,3000",
    )
    m = sub.add_parser("compete", help="record validate runs against a competing long-lived TCP flow")
    m.add_argument("--runs", type=int, default=2)
    m.add_argument("--seed", type=int, help="draw --paths random paths with this seed instead of the fixed five")
    m.add_argument("--paths", type=int, default=6, help="how many paths a seeded draw records")
    _path_kind_args(m)
    m.add_argument("--cc", choices=bq.CCS, help="the prober's congestion control on every path")
    m.add_argument("--other", choices=bq.CCS, help="the competing flow's congestion control on every path")
    m.add_argument(
        "--arrive",
        type=_arrive_s,
        help="the competing flow starts this many seconds into each run (inside its window) "
        "instead of 6 s before the runs, e.g. 2",
    )
    m.add_argument("--out", type=Path, default=ROOT / "test-artifacts" / "compete")
    m.add_argument("--prober", type=Path, default=bq.QUICKPROBE)
    s = sub.add_parser("summarise", help="replay recorded validate runs through qwreplay")
    s.add_argument("dirs", nargs="+", type=Path)
    s.add_argument("--replay-args", default="", help='qwreplay\'s options, e.g. "-M 3000 -T 5"')
    v = sub.add_parser(
        "compare",
        help="replay recorded validate runs through a qwreplay built before a change and through "
        "this build: what moved, and the coverage before and after",
    )
    v.add_argument("dirs", nargs="+", type=Path)
    v.add_argument("--before", type=Path, required=True, help="the qwreplay built before the change")
    v.add_argument("--before-args", default="", help="qwreplay's options for the build before")
    v.add_argument("--replay-args", default="", help="qwreplay's options for this build")
    v.add_argument(
        "-v", "--verbose", action="store_true", help="also count the runs whose -v replays are byte-identical"
    )
    k = sub.add_parser(
        "calibrate",
        help="per evidence class, the conformal quantile of miss scores on --fit runs, and the "
        "coverage it gives on --check runs (paths it was not fitted on)",
    )
    k.add_argument("--fit", nargs="+", type=Path, required=True)
    k.add_argument("--check", nargs="+", type=Path, default=[])
    k.add_argument("--level", type=float, default=0.95)
    k.add_argument("--split-cc", action="store_true", help="a class per evidence and congestion control")
    k.add_argument("--replay-args", default="", help="qwreplay's options")
    a = ap.parse_args(argv)
    if a.cmd == "compete" and a.aqm != "none" and (a.policer or a.bottleneck != "delayline"):
        ap.error(
            f"compete: --aqm {a.aqm} runs at the delay line's bottleneck only (not with --policer or --bottleneck)"
        )
    commands = {"collect": collect, "compete": compete, "summarise": summarise, "compare": compare}
    return {**commands, "calibrate": calibrate}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
