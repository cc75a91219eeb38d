"""Fidelity of the lab's delay jitter and cross traffic, measured with real flows."""

import json
import math
import socket
import statistics
import struct
import subprocess
import threading
import time

import pytest

from tests.lab.conftest import labctl
from tests.lab.test_delayline import assert_conserved, delayline_refusal, iperf3


def test_delayline_bad_jitter_and_cross_options_say_what_is_allowed(built_delayline):
    stderr = delayline_refusal(built_delayline, "--jitter-dist", "pareto")
    assert "--jitter-dist needs uniform or normal, got 'pareto'" in stderr
    stderr = delayline_refusal(built_delayline, "--fwd-jitter-order", "lifo")
    assert "--fwd-jitter-order needs fifo or netem, got 'lifo'" in stderr
    stderr = delayline_refusal(built_delayline, "--fwd-cross-on-ms", "0")
    assert "--fwd-cross-on-ms needs a number in [1, 3.6e+06], got '0'" in stderr


def test_labctl_jitter_and_cross_bad_input_says_what_is_allowed():
    with pytest.raises(ValueError, match=r"bad jitter_dist 'pareto' \(allowed: uniform, normal\)"):
        labctl.PathSpec(name="x", jitter_ms=1, jitter_dist="pareto")
    with pytest.raises(ValueError, match=r"bad jitter_order 'lifo' \(allowed: fifo, netem\)"):
        labctl.PathSpec(name="x", jitter_ms=1, jitter_order="lifo")
    with pytest.raises(ValueError, match=r"bad cross_mbps 100 \(allowed: 0 <= cross < the rate, 100\)"):
        labctl.PathSpec(name="x", rate_mbps=100, cross_mbps=100)
    p = labctl.PathSpec(name="x", rate_mbps=100, cross_mbps=40, cross_on_ms=200, cross_off_ms=300)
    assert p.cross_duty == pytest.approx(0.4)
    assert labctl.PathSpec(name="x").cross_duty == 0.0


SO_TIMESTAMPNS = 35  # Linux (asm-generic, 64-bit): a struct timespec per datagram, CLOCK_REALTIME


def arrivals_ns(lab, count: int, gap_s: float) -> list[tuple[int, int]]:
    """(sent, received) CLOCK_REALTIME nanoseconds of `count` UDP datagrams sent gap_s apart
    near -> far, in the order they arrived: the send time in the payload, the receive time the
    far namespace's kernel timestamp (the same clock: one host). Kernel timestamps keep this
    box's scheduling noise out of the figure."""
    rx = lab.socket(socket.AF_INET, socket.SOCK_DGRAM, where="far")
    rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    rx.bind((lab.far_addr, 0))
    rx.settimeout(5)
    got = []

    def receive():
        for _ in range(count):
            data, anc, _, _ = rx.recvmsg(64, socket.CMSG_SPACE(16))
            ((level, kind, ts),) = anc
            assert (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS)
            sec, nsec = struct.unpack("qq", ts[:16])
            got.append((int.from_bytes(data, "big"), sec * 1_000_000_000 + nsec))

    t = threading.Thread(target=receive, daemon=True)
    t.start()
    tx = lab.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with tx, rx:
        for _ in range(count):
            tx.sendto(time.time_ns().to_bytes(8, "big"), (lab.far_addr, rx.getsockname()[1]))
            time.sleep(gap_s)
        t.join(10)
    assert len(got) == count
    return got


def one_way_delays_ms(lab, count: int, gap_s: float, sent_ns: list | None = None) -> list[float]:
    """One-way delays near -> far of `count` UDP datagrams sent gap_s apart, in the order
    they arrived (arrivals_ns; their send times appended to sent_ns if given). Datagrams
    further apart than the jitter never wait for each other in the delay line, so they show
    the configured distribution."""
    got = arrivals_ns(lab, count, gap_s)
    if sent_ns is not None:
        sent_ns.extend(sent for sent, _ in got)
    return [(received - sent) / 1e6 for sent, received in got]


@pytest.mark.lab
@pytest.mark.parametrize(
    "dist,jitter_ms,one_way_sd_ms",
    [
        ("uniform", 4.0, 4.0 / math.sqrt(3)),  # U(-4, +4) ms has std-dev 4 / sqrt(3) = 2.31 ms
        ("normal", 3.0, 3.0),
    ],
)
def test_jitter_light_flow_delay_spread_matches_config(make_lab, dist, jitter_ms, one_way_sd_ms):
    rtt_ms = 30
    lab = make_lab(
        name=f"jit-{dist}", rate_mbps=100, rtt_ms=rtt_ms, queue_bytes=1 << 20, jitter_ms=jitter_ms, jitter_dist=dist
    )
    # 20 ms apart: two datagrams would have to draw delays 20 ms apart to need FIFO order
    # (uniform: never; normal: 4.7 std-devs of the difference).
    delays = one_way_delays_ms(lab, 250, 0.020)
    stats = lab.stats()
    assert_conserved(stats)
    fwd = stats["fwd"]
    assert fwd["rx_packets"] == 250, fwd
    # The delay line's own record of what it applied: the configured spread, zero mean.
    assert fwd["extra_delay_sd_us"] / 1e3 == pytest.approx(one_way_sd_ms, rel=0.15), fwd
    assert abs(fwd["extra_delay_mean_us"] / 1e3) <= 0.25 * one_way_sd_ms, fwd
    # And what the far side saw (250 samples: the std-dev within 15 %, the median within
    # 1 ms of half the RTT; the kernel path adds tens of microseconds). A delay the jitter
    # cannot draw (past U's edge, or 5 std-devs of the normal: p < 1e-6) is this box stalling
    # the sender between its timestamp and sendto, or the delay line's thread: one 40 ms stall
    # alone would lift the std-dev of 250 samples by half. A few are allowed and left out of
    # the spread; more than 2 % would be the emulator's own fault.
    bound_ms = jitter_ms + 1.0 if dist == "uniform" else 5 * one_way_sd_ms
    drawn = [d for d in delays if abs(d - rtt_ms / 2) <= bound_ms]
    assert len(delays) - len(drawn) <= 5, sorted(delays)[-10:]
    # 20 ms apart, no datagram waits for the one ahead (FIFO) unless a stall of this box had
    # the delay line read two together (the delay line stamps arrival when it reads); the
    # first of them then carries the stall and is among the delays the jitter cannot draw.
    # (One CI run clamped one datagram.)
    assert fwd["jitter_clamped_packets"] <= len(delays) - len(drawn), (fwd, sorted(delays)[-10:])
    assert statistics.stdev(drawn) == pytest.approx(one_way_sd_ms, rel=0.15), delays
    assert abs(statistics.median(delays) - rtt_ms / 2) <= 1.0, delays
    if dist == "uniform":
        assert min(delays) >= rtt_ms / 2 - jitter_ms - 0.05, min(delays)


def stall_spans(late_sent_ns: list[int], gap_ns: int) -> list[tuple[int, int]]:
    """The send-time spans of late datagrams, joined where fewer than gap_ns apart: one span
    per stall of this box, however many datagrams it held."""
    spans: list[tuple[int, int]] = []
    for s in sorted(late_sent_ns):
        if spans and s - spans[-1][1] < gap_ns:
            spans[-1] = (spans[-1][0], s)
        else:
            spans.append((s, s))
    return spans


def test_stall_spans_joins_a_stall_and_parts_two():
    ms = 1_000_000
    assert stall_spans([], 5 * ms) == []
    assert stall_spans([3 * ms, 1 * ms, 2 * ms, 6 * ms], 5 * ms) == [(1 * ms, 6 * ms)]
    assert stall_spans([1 * ms, 2 * ms, 9 * ms], 5 * ms) == [(1 * ms, 2 * ms), (9 * ms, 9 * ms)]


@pytest.mark.lab
def test_jitter_netem_order_gives_each_packet_its_own_draw(make_lab):
    # 1 ms apart under +-4 ms: in FIFO order most would wait for the one ahead; in netem
    # order each leaves at its own draw, so they arrive out of order, and the delays keep
    # U(-4, +4)'s zero mean, its spread (4 / sqrt(3) ms) and its edges.
    rtt_ms, jitter_ms = 30, 4.0
    lab = make_lab(
        name="jit-netem", rate_mbps=100, rtt_ms=rtt_ms, queue_bytes=1 << 20, jitter_ms=jitter_ms, jitter_order="netem"
    )
    sent = []
    delays = one_way_delays_ms(lab, 400, 0.001, sent)
    stats = lab.stats()
    assert_conserved(stats)
    fwd = stats["fwd"]
    assert fwd["jitter_order"] == "netem" and fwd["jitter_clamped_packets"] == 0, fwd
    overtaken = sum(b < a for a, b in zip(sent, sent[1:]))
    assert overtaken >= 100, overtaken
    # what the delay line applied (its own record): every draw, none held back
    assert fwd["jitter_reordered_packets"] >= 100, fwd
    assert abs(fwd["extra_delay_mean_us"]) <= 300, fwd
    assert fwd["extra_delay_sd_us"] / 1e3 == pytest.approx(jitter_ms / math.sqrt(3), rel=0.15), fwd
    # and what the far side saw: inside the draw's range but for this box's stalls. A stall
    # of the delay line's thread (it stamps arrival when it reads) makes late every datagram
    # sent while it lasted, 1 ms apart here: one 30 ms stall is some 25 late in a row (a CI
    # run saw 28). So stalls are counted, not late datagrams: runs of late ones in send
    # order, and each run's span left out of the spread, which it would lift.
    lo, hi = rtt_ms / 2 - jitter_ms - 0.05, rtt_ms / 2 + jitter_ms + 1.0
    in_range = [lo <= d <= hi for d in delays]
    spans = stall_spans([s for s, ok in zip(sent, in_range) if not ok], gap_ns=5_000_000)
    assert len(spans) <= 3 and sum(in_range) >= 0.8 * len(delays), (spans, sorted(delays)[-10:])
    drawn = [d for s, d, ok in zip(sent, delays, in_range) if ok and not any(a <= s <= b for a, b in spans)]
    assert statistics.stdev(drawn) == pytest.approx(jitter_ms / math.sqrt(3), rel=0.15), delays


@pytest.mark.lab
def test_jitter_bulk_flow_keeps_fifo_order(make_lab):
    # A window-limited flow (no queue drops): any retransmission would come from reordering
    # (three duplicate ACKs), which the delay line must never cause.
    lab = make_lab(name="jit-fifo", rate_mbps=100, rtt_ms=20, queue_bytes=1 << 20, jitter_ms=2.0, jitter_dist="uniform")
    j = iperf3(lab, "-t", "2", "-w", "128K")
    assert j["end"]["sum_sent"]["retransmits"] == 0
    stats = lab.stats()
    assert_conserved(stats)
    fwd = stats["fwd"]
    assert fwd["drop_queue_packets"] == 0 and fwd["drop_loss_packets"] == 0
    # Packets closer together than the jitter do wait for the one ahead: it happened, and
    # the applied delay never went below zero extra on average (it only adds waiting).
    assert fwd["jitter_clamped_packets"] > 0, fwd
    assert fwd["extra_delay_mean_us"] > 0, fwd


def cross_packets_expected(p: labctl.PathSpec, t0: float, t1: float) -> int:
    """Cross packets the source sends in (t0, t1] (seconds since the delay line started)."""
    gap = 1500 * 8 / (p.cross_mbps * 1e6)
    period = (p.cross_on_ms + p.cross_off_ms) / 1e3
    on = p.cross_on_ms / 1e3
    n, k = 0, int(t0 // period)
    while k * period <= t1:
        # arrivals at k*period + j*gap for j*gap < on
        start = k * period
        per_period = math.ceil(on / gap)
        lo = max(0, math.floor((t0 - start) / gap) + 1)
        hi = min(per_period - 1, math.floor((t1 - start) / gap))
        n += max(0, hi - lo + 1)
        k += 1
    return n


@pytest.mark.lab
def test_cross_traffic_idle_path_sends_its_rate_and_duty(make_lab):
    lab = make_lab(
        name="cross-idle",
        rate_mbps=100,
        rtt_ms=10,
        queue_bytes=1 << 20,
        cross_mbps=40,
        cross_on_ms=200,
        cross_off_ms=300,
    )
    s0 = lab.stats()
    time.sleep(2.0)
    s1 = lab.stats()
    sent = s1["fwd"]["cross_packets"] - s0["fwd"]["cross_packets"]
    want = cross_packets_expected(lab.path, s0["t"], s1["t"])
    # 40 Mbit/s of 1500-byte packets on 40 % of the time: about 2667 in 2 s; the count is
    # exact up to the packets that straddle the two snapshot instants.
    assert abs(sent - want) <= 2, (sent, want)
    assert 2300 < want < 3100
    assert s1["fwd"]["cross_drop_packets"] == 0
    assert s1["rev"]["cross_packets"] == 0  # the ACK direction carries no cross traffic


@pytest.mark.lab
def test_cross_traffic_share_of_a_busy_bottleneck(make_lab):
    rate, cross = 100.0, 40.0
    lab = make_lab(
        name="cross-share",
        rate_mbps=rate,
        rtt_ms=20,
        queue_bytes=250_000,
        cross_mbps=cross,
        cross_on_ms=500,
        cross_off_ms=500,
    )
    tcp = lab.popen(
        ["iperf3", "-c", lab.far_addr, "-p", str(lab.port), "-J", "-t", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)  # past slow-start
    s0 = lab.stats()
    time.sleep(3.0)  # three whole on/off periods
    s1 = lab.stats()
    out, err = tcp.communicate(timeout=30)
    assert tcp.returncode == 0, err
    assert json.loads(out)["end"]["sum_received"]["bits_per_second"] > 0.6 * rate * 1e6
    dt = s1["t"] - s0["t"]
    f0, f1 = s0["fwd"], s1["fwd"]
    tcp_bytes = f1["fwd_bytes"] - f0["fwd_bytes"]
    cross_bytes = f1["cross_bytes"] - f0["cross_bytes"]
    offered = f1["cross_bytes"] + f1["cross_drop_bytes"] - f0["cross_bytes"] - f0["cross_drop_bytes"]
    # The source offered 40 Mbit/s half of the time: 20 Mbit/s on average.
    assert offered * 8 / dt / 1e6 == pytest.approx(cross * lab.path.cross_duty, rel=0.05)
    # It shares the bottleneck's time: it got what it offered less what the full queue
    # dropped, i.e. about 20 % of the link, and never more than the link carried in all.
    cross_drops = f1["cross_drop_packets"] - f0["cross_drop_packets"]
    assert cross_drops <= 0.1 * offered / 1500
    assert cross_bytes == offered - (f1["cross_drop_bytes"] - f0["cross_drop_bytes"])
    share = cross_bytes * 8 / dt / (rate * 1e6)
    assert share == pytest.approx(cross * lab.path.cross_duty / rate, rel=0.1), share
    assert (tcp_bytes + cross_bytes) * 8 / dt <= 1.01 * rate * 1e6
    # And the same queue: the TCP flow lost packets to it (each on period fills it), and
    # got no more than what the cross traffic left.
    assert f1["drop_queue_packets"] > f0["drop_queue_packets"]
    assert tcp_bytes * 8 / dt / 1e6 <= rate - cross * lab.path.cross_duty + 2
