"""prober/bench/bbr_shared.py: the three readings a BBR term for a shared bottleneck could
start from, on synthetic samples whose readings are known and on a kept held-out draw."""

import json
import sys

from tests.prober import qp

sys.path.insert(0, str(qp.ROOT / "prober" / "bench"))
import bbr_shared  # noqa: E402
import heldout  # noqa: E402

MIN_RTT_US = 20_000


CRUISE_BPS = 10e6


def sample(t, rtt_us, gain, rate_bps=CRUISE_BPS):
    stream = {"rtt_us": rtt_us, "min_rtt_us": MIN_RTT_US, "bbr": {"pacing_gain": gain}, "delivery_rate_bps": rate_bps}
    return {"event": "sample", "t": t, "streams": [stream]}


def run_of(rise_us, lift=0.0):
    """A BBR run: slow-start ends at 0.1 s, then cruising at 24 ms of smoothed RTT (1.2 x its
    20 ms floor from the first sample) and 10 Mbit/s of delivery rate, with one up-phase (gain
    1.25, two samples) that lifts the RTT by rise_us, and a down-phase (0.75) after it whose
    sample, one min RTT after the up-phase, reads the delivery rate lift higher."""
    run = [sample(0.0, 20_000, 2.89)]
    t, gains = 0.5, [1.0] * 5 + [1.25] * 2 + [0.75] + [1.0] * 5
    for i, gain in enumerate(gains):
        rtt = 24_000 + (rise_us if gain == 1.25 or gains[i - 1] == 1.25 else 0)
        run.append(sample(t, rtt, gain, CRUISE_BPS * (1 + lift) if gain == 0.75 else CRUISE_BPS))
        t += 0.02
    return run


def test_bbr_shared_readings_alone_at_a_full_link_read_one():
    # a quarter of the min RTT (5 ms) more queue in the up-phase and no more delivered: the
    # flow alone at a full link
    assert bbr_shared.readings(run_of(5_000), 0.1) == (1.2, 1.0, 0.0, 1)


def test_bbr_shared_readings_a_fifth_of_the_link_read_a_fifth():
    queue, probe, rate, phases = bbr_shared.readings(run_of(1_000), 0.1)
    assert (queue, round(probe, 9), rate, phases) == (1.2, 0.2, 0.0, 1)


def test_bbr_shared_rate_reads_the_extra_delivered_over_the_phase_extra():
    # an eighth more delivered of a quarter more sent: half of the extra
    assert round(bbr_shared.readings(run_of(5_000, lift=0.125), 0.1)[2], 9) == 0.5
    # a delivery-rate sample outside the phase's acks is not read
    run = run_of(5_000)
    run[-1]["streams"][0]["delivery_rate_bps"] = 2 * CRUISE_BPS
    assert bbr_shared.readings(run, 0.1)[2] == 0.0


def test_bbr_shared_readings_none_without_an_up_phase():
    run = [sample(0.0, 20_000, 2.89)] + [sample(0.5 + 0.02 * i, 24_000, 1.0) for i in range(10)]
    assert bbr_shared.readings(run, 0.1) is None


def test_bbr_shared_prints_single_stream_bbr_runs_and_the_competing_range(capsys):
    # a kept competing draw: BBR and Reno paths; only the six BBR runs are read
    assert bbr_shared.main([str(heldout.HELDOUT / "c817-compete")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7
    assert lines[2].split() == [
        "c817-r20-30ms-q0.5-m1500-bbr-P1-vs-bbr.validate0",
        "queue",
        "1.24",
        "probe",
        "0.05",
        "rate",
        "0.14",
        "(13",
        "up-phases)",
    ]
    assert all("reno" not in line for line in lines)
    assert lines[-1].split() == (
        "competing runs 6 queue 1.24-1.78 (median 1.52) probe 0.04-0.14 (median 0.07) rate 0.03-0.93 (median 0.07)".split()
    )


def write_run(path, run, streams):
    events = [{"event": "start", "congestion": "bbr", "params": {"streams": streams}}]
    events += [run[0], {"event": "slow_start_end", "t": 0.1}] + run[1:]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_bbr_shared_reads_a_single_stream_and_skips_several(tmp_path, capsys):
    write_run(tmp_path / "one-bbr-P1.validate0.jsonl", run_of(5_000), 1)
    two = run_of(5_000)
    for e in two:
        e["streams"].append(dict(e["streams"][0]))
    write_run(tmp_path / "two-bbr-P2.validate0.jsonl", two, 2)
    assert bbr_shared.main([str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["one-bbr-P1.validate0", "other"]
    assert lines[0].split()[1:] == [
        "queue",
        "1.20",
        "probe",
        "1.00",
        "rate",
        "0.00",
        "(1",
        "up-phases)",
    ]


def test_bbr_shared_groups_runs_by_how_the_other_flow_came():
    assert bbr_shared.group_of("c817-r20-30ms-q0.5-m1500-bbr-P1-vs-bbr.validate0.jsonl.gz") == "competing"
    assert bbr_shared.group_of("c853-r50-30ms-q0.5-m1500-bbr-P1-vs-cubic-at1s.validate1.jsonl.gz") == "arriving"
    assert bbr_shared.group_of("c851-r150-15ms-q1-m1500-bbr-P1-vs-cubic-at2.5s.validate0.jsonl") == "arriving"
    assert bbr_shared.group_of("r10-50ms-q1-bbr-P1.validate0.jsonl.gz") == "other"


def test_bbr_shared_in_flight_reads_the_kernels_count_over_cwnd_while_cruising():
    run = run_of(5_000)
    assert bbr_shared.in_flight(run, 0.1) is None  # recorded before in_flight_bytes
    for e in run:
        gain = e["streams"][0]["bbr"]["pacing_gain"]
        # half of cwnd in flight while cruising, all of it in the up- and down-phases
        e["streams"][0] |= {"cwnd_bytes": 60_000, "in_flight_bytes": 30_000 if gain == 1.0 else 60_000}
    assert bbr_shared.in_flight(run, 0.1) == 0.5
