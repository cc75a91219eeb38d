"""An asymmetric path: the ACK direction's own, slower bottleneck (a cable modem's or DSL
line's upstream carrying the site's ACKs), measured with real packets."""

import pytest

from tests.lab.conftest import labctl
from tests.lab.test_delayline import assert_conserved, iperf3


def test_labctl_bad_ack_settings_say_what_is_allowed():
    with pytest.raises(ValueError, match=r"bad ack_rate_mbps -1 \(allowed: 0 = the rate, or up to 10000\)"):
        labctl.PathSpec(name="x", ack_rate_mbps=-1)
    with pytest.raises(ValueError, match=r"bad ack_queue_bytes 100 \(allowed: 0 = the queue, or 1500 B - 1 GiB\)"):
        labctl.PathSpec(name="x", ack_queue_bytes=100)
    p = labctl.PathSpec(name="x", ack_rate_mbps=2, ack_queue_bytes=25_000)
    assert (p.ack_rate_mbps, p.ack_queue_bytes, p.queue_bytes) == (2, 25_000, 1 << 20)
    with pytest.raises(ValueError, match=r"bad ack_cross_mbps 2 \(allowed: 0 <= cross < the ACK direction's rate, 2\)"):
        labctl.PathSpec(name="x", ack_rate_mbps=2, ack_cross_mbps=2)
    with pytest.raises(ValueError, match=r"bad ack cross on/off 0/10 ms \(allowed: on 1 ms-1 h, off 0-1 h\)"):
        labctl.PathSpec(name="x", ack_cross_mbps=1, ack_cross_on_ms=0, ack_cross_off_ms=10)
    # without an ACK rate of its own the ACK direction runs at the path's rate
    assert labctl.PathSpec(name="x", rate_mbps=100, ack_cross_mbps=60).ack_cross_mbps == 60


@pytest.mark.lab
def test_ack_direction_is_its_own_bottleneck(make_lab):
    # 100 Mbit/s of 1500-byte frames is 8,300 segments a second, whose ACKs (52 bytes each,
    # one per two segments) would need about 1.7 Mbit/s. At 0.4 Mbit/s the ACK direction is
    # the path's bottleneck: it runs at its rate, and the sender, clocked by the ACKs that
    # come back, sends two segments per ACK: about 2 x 1448 B x 8 per 52 B x 8 of ACKs, 56
    # times the ACK direction's rate (21 Mbit/s), far below the data direction's 100 Mbit/s,
    # which itself stays as configured.
    ack_bps, ack_queue = 400_000, 5_000
    lab = make_lab(
        name="asym",
        rate_mbps=100,
        rtt_ms=20,
        queue_bytes=1 << 20,
        mtu=1500,
        ack_rate_mbps=ack_bps / 1e6,
        ack_queue_bytes=ack_queue,
    )
    before = lab.stats()
    j = iperf3(lab, "-t", "3")
    stats = lab.stats()
    assert_conserved(stats)
    fwd, rev = stats["fwd"], stats["rev"]
    assert (fwd["rate_bps"], fwd["queue_bytes"]) == (100_000_000, 1 << 20), fwd
    assert (rev["rate_bps"], rev["queue_bytes"]) == (ack_bps, ack_queue), rev
    assert rev["max_backlog_bytes"] <= ack_queue, rev
    seconds = stats["t"] - before["t"]
    carried_bps = (rev["fwd_bytes"] - before["rev"]["fwd_bytes"]) * 8 / seconds
    acks_per_s = (rev["fwd_packets"] - before["rev"]["fwd_packets"]) / seconds
    assert 0.85 * ack_bps <= carried_bps <= 1.02 * ack_bps, (carried_bps, rev)
    goodput_bps = j["end"]["sum_received"]["bits_per_second"]
    assert goodput_bps == pytest.approx(acks_per_s * 2 * 1448 * 8, rel=0.15), (goodput_bps, acks_per_s)
    assert goodput_bps < 30e6, goodput_bps


@pytest.mark.lab
def test_ack_direction_cross_traffic_shares_the_ack_queue(make_lab):
    # The site's own upload (1.5 Mbit/s, always on) shares a 2 Mbit/s upstream with the ACKs
    # of a bulk flow: it runs at its rate, and the ACKs wait behind it.
    lab = make_lab(
        name="asym-x", rate_mbps=50, rtt_ms=20, queue_bytes=1 << 20, mtu=1500, ack_rate_mbps=2, ack_cross_mbps=1.5
    )
    before = lab.stats()
    iperf3(lab, "-t", "2")
    stats = lab.stats()
    assert_conserved(stats)
    rev = stats["rev"]
    assert (rev["cross_rate_bps"], rev["cross_off_ms"]) == (1_500_000, 0.0), rev
    seconds = stats["t"] - before["t"]
    cross_bps = (rev["cross_bytes"] - before["rev"]["cross_bytes"]) * 8 / seconds
    assert cross_bps == pytest.approx(1.5e6, rel=0.05), (cross_bps, rev)
    # the ACKs (under 0.5 Mbit/s of 52-byte packets) queue behind 1500-byte cross packets,
    # each 6 ms on the wire at 2 Mbit/s
    assert rev["sojourn_mean_us"] > 1000, rev
