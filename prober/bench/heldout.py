#!/usr/bin/env python3
"""Held-out draws kept in the repository: the estimator judged on paths it was not tuned on,
by every later change, without recording them again.

    prober/bench/heldout.py keep /tmp/c/s831 --name s831-codel \\
        --command "replay_corpus.py collect --seed 831 --paths 6 --mtu 1500 --aqm codel"
    prober/bench/heldout.py                # each draw's line now, and whether it moved
    prober/bench/heldout.py --write        # after an estimator change: store the lines now

A draw recorded by `replay_corpus.py collect` or `compete` lives in /tmp and dies with the
machine, so a change judged on AQM, policers, jitter or competing flows one session could not
be judged on them the next. `keep` copies a draw's validate runs into prober/bench/heldout/NAME
(gzipped, as bench-quick keeps its runs) and writes its entry in MANIFEST.json there: the
command that recorded it, when, on which kernel, the estimator fingerprint it was recorded at
(changes after it were judged on it, so it is held out only from the ones before), and the
draw's line (`replay_corpus.py summarise`'s last line, and its coverage per congestion
control) at this build. Without `keep`, every draw is replayed through this build's qwreplay
and its line printed beside the stored one, then one line over every draw; `--write` stores
the lines this build gives. tests/prober/test_heldout_runs.py holds the stored lines to this
build's replay, so an estimator change that moves a held-out answer shows in its commit.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_quick as bq  # noqa: E402
import replay_corpus  # noqa: E402

HELDOUT = bq.ROOT / "prober" / "bench" / "heldout"
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def by_cc(runs: list[dict]) -> str:
    """Coverage per congestion control, e.g. "bbr 4/6, reno 5/6"."""
    runs_of = collections.defaultdict(list)
    for r in runs:
        runs_of[r["cc"]].append(r)
    return ", ".join(f"{cc} {sum(r['covered'] == '1' for r in rs)}/{len(rs)}" for cc, rs in sorted(runs_of.items()))


def draw_line(runs: list[dict]) -> dict:
    """What the manifest keeps of a draw's replay: its totals line and coverage per cc."""
    return {"totals": replay_corpus.draw_totals(runs), "by_cc": by_cc(runs)}


def stored_line(draw: dict) -> dict:
    """The line the manifest stored for a draw, as draw_line gives one."""
    return {"totals": draw["totals"], "by_cc": draw["by_cc"]}


def load(root: Path) -> dict:
    path = root / "MANIFEST.json"
    return json.loads(path.read_text()) if path.exists() else {"draws": []}


def save(root: Path, manifest: dict) -> None:
    (root / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def keep(a) -> int:
    """Copy the validate runs of a.draw into a.root / a.name, gzipped, and add its entry."""
    if not NAME.fullmatch(a.name):
        raise SystemExit(f"heldout: --name {a.name!r}: use 1-64 lower-case letters, digits and dashes")
    manifest = load(a.root)
    if any(d["name"] == a.name for d in manifest["draws"]) or (a.root / a.name).exists():
        raise SystemExit(f"heldout: a draw named {a.name!r} is kept already; choose another --name")
    files = sorted(a.draw.glob("*.validate*.jsonl"))
    if not files:
        raise SystemExit(f"heldout: no *.validate*.jsonl in {a.draw} (a draw replay_corpus.py recorded)")
    # replayed before anything is written: a draw that cannot be kept leaves nothing behind
    runs = replay_corpus.replay([a.draw])
    if len(runs) != len(files):
        done = {r["run"] for r in runs}
        unfinished = ", ".join(f.name for f in files if f.name not in done)
        raise SystemExit(f"heldout: {unfinished} in {a.draw}: not a finished validate run; keep only whole draws")
    entry = {
        "name": a.name,
        "command": a.command,
        "recorded": time.strftime("%Y-%m-%d", time.gmtime(min(f.stat().st_mtime for f in files))),
        "kernel": os.uname().release,
        "recorded_at_estimator": bq.estimator_fingerprint(),
        "runs": len(files),
        **draw_line(runs),
    }
    out = a.root / a.name
    out.mkdir(parents=True)
    for f in files:
        # mtime 0: the same run gzips to the same bytes whenever it is kept
        (out / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes(), mtime=0))
    manifest["draws"].append(entry)
    save(a.root, manifest)
    print(f"{a.name}: {entry['runs']} runs kept in {out}\n  {entry['totals']}\n  {entry['by_cc']}")
    return 0


def show(a) -> int:
    """Replay every kept draw: its line now beside the stored one; then one over all draws."""
    manifest = load(a.root)
    if not manifest["draws"]:
        raise SystemExit(f"heldout: no draws kept in {a.root} (heldout.py keep DIR --name ... --command ...)")
    every, moved = [], 0
    for d in manifest["draws"]:
        runs = replay_corpus.replay([a.root / d["name"]])
        every += runs
        now = draw_line(runs)
        same = now == stored_line(d)
        moved += not same
        print(f"{d['name']}: {d['command']}\n  {now['totals']}\n  {now['by_cc']}")
        if not same:
            print(f"  stored: {d['totals']}\n          {d['by_cc']}")
        if a.write:
            d.update(now)
    print(f"{len(manifest['draws'])} draws, {moved} moved since stored\n{replay_corpus.draw_totals(every)}")
    print(f"  {by_cc(every)}")
    if a.write:
        save(a.root, manifest)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=HELDOUT, help="where the draws are kept")
    sub = ap.add_subparsers(dest="cmd")
    k = sub.add_parser("keep", help="keep a recorded draw's validate runs")
    k.add_argument("draw", type=Path, help="the directory replay_corpus.py collect / compete wrote")
    k.add_argument("--name", required=True, help="the draw's name: lower-case letters, digits, dashes")
    k.add_argument("--command", required=True, help="the command that recorded it")
    ap.add_argument("--write", action="store_true", help="store each draw's line as this build replays it")
    a = ap.parse_args(argv)
    if a.cmd == "keep" and a.write:
        ap.error("--write stores the kept draws' lines; it does not go with keep")
    return keep(a) if a.cmd == "keep" else show(a)


if __name__ == "__main__":
    sys.exit(main())
