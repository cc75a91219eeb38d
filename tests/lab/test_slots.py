"""The delay line's netem-style slots (Wi-Fi-like aggregation), measured with real packets."""

import statistics

import pytest

from tests.lab.conftest import labctl
from tests.lab.test_delayline import assert_conserved, delayline_refusal, iperf3
from tests.lab.test_jitter_cross import arrivals_ns


def test_delayline_bad_slot_options_say_what_is_allowed(built_delayline):
    stderr = delayline_refusal(built_delayline, "--slot-min-us", "5000", "--slot-max-us", "1000")
    assert "fwd: slot-min-us is above slot-max-us (allowed: min <= max)" in stderr
    stderr = delayline_refusal(built_delayline, "--rev-slot-packets", "8")
    assert "rev: a slot budget needs slot-max-us above 0" in stderr
    stderr = delayline_refusal(built_delayline, "--slot-max-us", "4000", "--jitter-order", "netem")
    assert "fwd: slots work in fifo jitter order only" in stderr
    stderr = delayline_refusal(built_delayline, "--slot-max-us", "2e6")
    assert "--slot-max-us needs a number in [0, 1e+06], got '2e6'" in stderr


def test_labctl_bad_slot_settings_say_what_is_allowed():
    with pytest.raises(ValueError, match=r"bad slot gap 6-1 ms \(allowed: 0 <= min <= max <= 1000\)"):
        labctl.PathSpec(name="x", slot_min_ms=6, slot_max_ms=1)
    with pytest.raises(ValueError, match=r"bad slot budget with no slot gap \(allowed: slot_max_ms > 0\)"):
        labctl.PathSpec(name="x", slot_packets=4)
    with pytest.raises(ValueError, match=r"bad slots with jitter_order netem \(allowed only with fifo\)"):
        labctl.PathSpec(name="x", slot_max_ms=4, jitter_ms=1, jitter_order="netem")
    # 8 packets of 1500 bytes per 4 ms on average carry 24 Mbit/s, not the path's 100
    with pytest.raises(ValueError, match=r"bad slot budget 12000 bytes per 4 ms carries 24.0 Mbit/s"):
        labctl.PathSpec(name="x", rate_mbps=100, mtu=1500, slot_min_ms=2, slot_max_ms=6, slot_packets=8)
    p = labctl.PathSpec(name="x", rate_mbps=100, mtu=1500, slot_min_ms=2, slot_max_ms=6, slot_bytes=65536)
    assert (p.slot_packets, p.slot_bytes) == (0, 65536)


def bursts(received_ns: list[int], within_ns: int = 300_000) -> list[list[int]]:
    """Arrival times grouped into bursts: each within `within_ns` of the one before."""
    groups: list[list[int]] = []
    for r in sorted(received_ns):
        if groups and r - groups[-1][-1] <= within_ns:
            groups[-1].append(r)
        else:
            groups.append([r])
    return groups


@pytest.mark.lab
def test_slots_release_packets_in_bursts_a_gap_apart(make_lab):
    # One datagram a millisecond under a fixed 5 ms slot gap: each slot opens 5 ms after the
    # first datagram that found none open and carries the ones due by then, about five, so
    # datagrams arrive in bursts 5-6 ms apart and wait 2.5 ms past their due time on average
    # (0-5 ms). Without slots they would arrive one by one, a millisecond apart.
    rtt_ms = 20
    lab = make_lab(name="slot-fixed", rate_mbps=100, rtt_ms=rtt_ms, queue_bytes=1 << 20, slot_min_ms=5, slot_max_ms=5)
    got = arrivals_ns(lab, 300, 0.001)
    stats = lab.stats()
    assert_conserved(stats)
    fwd = stats["fwd"]
    assert (fwd["slot_min_us"], fwd["slot_max_us"], fwd["slot_packets"]) == (5000.0, 5000.0, 0), fwd
    groups = bursts([r for _, r in got])
    sizes = [len(g) for g in groups]
    # 300 datagrams over about 0.36 s (sleep overshoots a little): one slot per 5-6 ms
    assert 50 <= len(groups) <= 75, sizes
    assert statistics.median(sizes) in (4, 5, 6), sizes
    starts = [g[0] for g in groups]
    gaps_ms = [(b - a) / 1e6 for a, b in zip(starts, starts[1:])]
    assert statistics.median(gaps_ms) == pytest.approx(5.5, abs=0.8), gaps_ms
    # the delay line's record: every packet waited 0-5 ms beyond the fixed delay
    assert fwd["extra_delay_mean_us"] == pytest.approx(2500, abs=700), fwd
    assert fwd["slots"] == pytest.approx(len(groups), abs=3), (fwd, len(groups))
    delays_ms = [(r - s) / 1e6 for s, r in got]
    assert statistics.median(delays_ms) == pytest.approx(rtt_ms / 2 + 2.5, abs=1.0), delays_ms


@pytest.mark.lab
def test_slots_budget_closes_a_slot_and_bulk_flow_keeps_the_rate(make_lab):
    # A bulk TCP flow through 1-6 ms gaps with at most 6 jumbo frames (54 kB) a slot:
    # capacity 54 kB / 3.5 ms = 123 Mbit/s, above the 100 Mbit/s link (1389 frames/s, 4.9
    # per 3.5 ms), so the flow still gets the link, in bursts, with no reordering (no
    # retransmits in a window-limited run), and the slots after the longer gaps (over 4.3 ms)
    # are closed by their budget.
    lab = make_lab(
        name="slot-bulk", rate_mbps=100, rtt_ms=20, queue_bytes=1 << 20, slot_min_ms=1, slot_max_ms=6, slot_packets=6
    )
    j = iperf3(lab, "-t", "3", "-w", "1M")
    stats = lab.stats()
    assert_conserved(stats)
    fwd, rev = stats["fwd"], stats["rev"]
    assert j["end"]["sum_sent"]["retransmits"] == 0
    assert fwd["drop_queue_packets"] == 0
    assert j["end"]["sum_received"]["bits_per_second"] / 1e6 == pytest.approx(95, abs=8)
    assert fwd["slots_full"] > 0 and rev["slots"] > 0, (fwd, rev)
    assert fwd["fwd_packets"] / fwd["slots"] <= 6, fwd
