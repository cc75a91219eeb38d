#!/usr/bin/env python3
"""Three readings a BBR window could take of a bottleneck it shares, measured on recorded runs.

    prober/bench/bbr_shared.py prober/bench/heldout/c8*/ prober/bench/heldout/s8*/ prober/bench/runs

A BBR flow that starts beside a long-lived flow takes a share that moves for tens of seconds
after its window (report-corpus.md, "Held-out draws kept in the repository": BBR held the
20 s figure in 6 of 12 runs against a competing flow), and its interval has no term for that:
a Reno or CUBIC window reads a shared queue from its smoothed RTT's slope against cwnd
(qwshare.c), and BBR's cwnd does not follow its in-flight. This prints, for each
single-stream BBR validate run, the three readings a BBR term could start from, over the span
a quick window measures (0.3 to 4.3 s after slow-start's end):

- queue: the median, over samples where BBR cruises (pacing gain 1), of the smoothed RTT over
  its smallest since the run began. Alone, BBR paces at its bandwidth estimate and keeps
  little queue; beside a flow that fills the buffer, the other flow's queue stands.
- probe: per PROBE_BW up-phase (pacing gain above 1), how far the smoothed RTT rose, from the
  sample before the phase to the largest one through two samples after it, over a quarter of
  the min RTT. The phase sends a quarter of a BDP more; at a full link that the flow has
  alone the queue grows by that, a quarter of the min RTT (about 1); at a share s of the link
  it grows by s of that, since the queue drains at the link's rate.
- rate: per up-phase, the largest delivery-rate sample the kernel took from one min RTT after
  the phase began to one min RTT after it ended (while its extra data is acked), over the
  median delivery-rate sample while cruising, less 1, over the phase's extra 0.25. At a full
  link the flow has alone the extra data only queues and the rate holds (0); in a FIFO queue
  shared at s, a flow whose sending follows its pacing takes (1 - s) / (1 + s / 4) of the
  extra (s = 0.5: 0.44). The largest sample, not the mean, favours a parting: the mean reads
  the competing runs lower still.
- in_flight (runs recorded with in_flight_bytes, the kernel's own count): the median, over the
  samples where BBR cruises, of what is in flight over cwnd. In PROBE_BW the kernel caps what
  is in flight at twice its estimate times its min RTT; alone, BBR paces about one BDP into
  that (about 0.5), and where another flow's queue makes a round trip longer, the flow fills
  its cwnd (about 1), is cwnd-limited, and its up-phases send little more than it cruises.

A run is competing when its name says so ("-vs-", as `replay_corpus.py compete` names them),
and arriving when the other flow started inside the run ("-vs-CC-atNs", `compete --arrive`):
its span holds readings from before the other flow came and after. The last lines give each
reading's range over each group: a term is worth building on a reading only where the
competing and the other runs' ranges part.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_quick as bq  # noqa: E402
import replay_corpus  # noqa: E402

SPAN_S = (0.3, 4.3)  # after slow-start's end: the part a quick window measures
PROBE_GAIN = 1.1  # a pacing gain above this is PROBE_BW's up-phase (1.25)
READINGS = ("queue", "probe", "rate")


def samples(path: Path) -> tuple[str | None, int, float | None, list[dict]]:
    """The run's congestion control, stream count, slow-start end and samples."""
    cc, streams, ss_end, out = None, 0, None, []
    for e in bq.parse_events(path.read_text()):
        if e["event"] == "start":
            cc, streams = e.get("congestion"), e["params"]["streams"]
        elif e["event"] == "slow_start_end":
            ss_end = e["t"]
        elif e["event"] == "sample":
            out.append(e)
    return cc, streams, ss_end, out


def readings(run: list[dict], ss_end: float) -> tuple[float, float, float, int] | None:
    """(queue, probe, rate, up-phases) of one single-stream BBR run; None if it never cruised
    in the span or showed no whole up-phase there."""
    floor = float("inf")
    span = []
    for e in run:
        s = e["streams"][0]
        floor = min(floor, s["rtt_us"])
        if ss_end + SPAN_S[0] <= e["t"] <= ss_end + SPAN_S[1]:
            gain = (s.get("bbr") or {}).get("pacing_gain")
            span.append((e["t"], s["rtt_us"] / floor, s["rtt_us"], s["min_rtt_us"], gain, s["delivery_rate_bps"]))
    cruising = [q for _, q, _, _, gain, _ in span if gain == 1.0]
    cruise_rate = statistics.median([d for *_, gain, d in span if gain == 1.0] or [0])
    rises, gains, i = [], [], 1
    while i < len(span):
        gain = span[i][4]
        if gain is None or gain <= PROBE_GAIN:
            i += 1
            continue
        j = i
        while j < len(span) and (span[j][4] or 0) > PROBE_GAIN:
            j += 1
        if j < len(span):
            peak = max(rtt for _, _, rtt, _, _, _ in span[i : j + 2])
            rises.append((peak - span[i - 1][2]) / (0.25 * span[i][3]))
            gains.append(rate_gain(span, i, j, cruise_rate))
        i = j + 1
    if not cruising or not rises or cruise_rate <= 0:
        return None
    return (
        statistics.median(cruising),
        statistics.median(rises),
        statistics.median(gains),
        len(rises),
    )


def in_flight(run: list[dict], ss_end: float) -> float | None:
    """The in-flight reading of one single-stream BBR run (see the module's doc): the median,
    over the span's samples where BBR cruises, of in_flight_bytes over cwnd; None for runs
    recorded before the samples carried in_flight_bytes, or with no such sample."""
    shares = [
        e["streams"][0]["in_flight_bytes"] / e["streams"][0]["cwnd_bytes"]
        for e in run
        if ss_end + SPAN_S[0] <= e["t"] <= ss_end + SPAN_S[1]
        and (e["streams"][0].get("bbr") or {}).get("pacing_gain") == 1.0
        and "in_flight_bytes" in e["streams"][0]
        and e["streams"][0]["cwnd_bytes"] > 0
    ]
    return statistics.median(shares) if shares else None


def rate_gain(span: list[tuple], i: int, j: int, cruise_rate: float) -> float:
    """The rate reading of the up-phase span[i:j] (see the module's doc): its extra data is
    acked from one min RTT after it began to one after it ended (span[j] is the sample that
    saw it over)."""
    min_rtt_s = span[i][3] / 1e6
    rates = [d for t, *_, d in span if span[i][0] + min_rtt_s <= t <= span[j][0] + min_rtt_s]
    return (max(rates, default=cruise_rate) / cruise_rate - 1) / 0.25


def group_of(name: str) -> str:
    """ "arriving", "competing" or "other", from a run's file name (see the module's doc)."""
    if re.search(r"-vs-[a-z]+-at[0-9.]+s\.", name):
        return "arriving"
    return "competing" if "-vs-" in name else "other"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    a = ap.parse_args(argv)
    groups: dict[str, list[tuple[float, float, float]]] = {"competing": [], "arriving": [], "other": []}
    flights: dict[str, list[float]] = {"competing": [], "arriving": [], "other": []}
    with replay_corpus.validate_files(a.dirs) as files:
        for f in sorted(files, key=lambda f: Path(f).name):
            name = Path(f).name
            cc, streams, ss_end, run = samples(Path(f))
            if cc != "bbr" or streams != 1 or ss_end is None:
                continue
            got = readings(run, ss_end)
            if got is None:
                continue
            queue, probe, rate, phases = got
            share = in_flight(run, ss_end)
            groups[group_of(name)].append((queue, probe, rate))
            if share is not None:
                flights[group_of(name)].append(share)
            print(
                f"{name.split('.jsonl')[0]:70s} queue {queue:5.2f}  probe {probe:5.2f}  rate {rate:5.2f}"
                + (f"  in_flight {share:4.2f}" if share is not None else "")
                + f" ({phases} up-phases)"
            )
    for name, got in groups.items():
        if got:
            print(
                f"{name:9s} runs {len(got):3d}"
                + "".join(ranged(label, [g[k] for g in got]) for k, label in enumerate(READINGS))
            )
    for name, got in flights.items():
        if got:
            print(f"{name:9s} runs {len(got):3d} with in_flight_bytes" + ranged("in_flight", got))
    return 0


def ranged(label: str, values: list[float]) -> str:
    """ "  label lo-hi (median m)" over one group's readings."""
    return f"  {label} {min(values):.2f}-{max(values):.2f} (median {statistics.median(values):.2f})"


if __name__ == "__main__":
    sys.exit(main())
