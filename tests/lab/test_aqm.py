"""The delay line's CoDel (RFC 8289) and PIE (RFC 8033): AQMs the kernel here lacks, for quick mode's hidden paths."""

import pytest

from tests.lab.conftest import labctl
from tests.lab.test_delayline import assert_conserved, delayline_refusal, iperf3


def test_delayline_bad_aqm_says_what_is_allowed(built_delayline):
    stderr = delayline_refusal(built_delayline, "--aqm", "fq_codel")
    assert "--aqm needs none, codel or pie, got 'fq_codel'" in stderr
    stderr = delayline_refusal(built_delayline, "--fwd-codel-target-us", "0")
    assert "--fwd-codel-target-us needs a number in [1, 1e+07], got '0'" in stderr
    stderr = delayline_refusal(built_delayline, "--pie-tupdate-us", "10")
    assert "--pie-tupdate-us needs a number in [1000, 1e+07], got '10'" in stderr


def test_labctl_aqm_bad_input_says_what_is_allowed():
    with pytest.raises(ValueError, match=r"bad aqm 'red' \(allowed: none, codel, pie\)"):
        labctl.PathSpec(name="x", aqm="red")
    with pytest.raises(
        ValueError, match=r"aqm codel with a kernel bottleneck \(allowed only with bottleneck delayline\)"
    ):
        labctl.PathSpec(name="x", aqm="codel", bottleneck="htb")
    assert labctl.PathSpec(name="x").aqm == "none"


def _bulk_cubic_through(make_lab, aqm):
    """One CUBIC flow for 4 s into a 5-BDP buffer (2 MB at 100 Mbit/s x 40 ms) under the AQM;
    checks what every AQM must do there and returns the forward direction's counters: the AQM
    dropped and the buffer's top never did, the flow saw the drops, and the ACK direction
    never queued enough to drop."""
    lab = make_lab(name=aqm, rate_mbps=100, rtt_ms=40, queue_bytes=2_000_000, mtu=1500, aqm=aqm)
    j = iperf3(lab, "-t", "4", "-C", "cubic")
    stats = lab.stats()
    assert_conserved(stats)
    fwd = stats["fwd"]
    assert fwd["aqm"] == aqm
    assert fwd["drop_aqm_packets"] > 0, fwd
    assert fwd["drop_queue_packets"] == 0 and fwd["max_backlog_bytes"] < fwd["queue_bytes"], fwd
    assert j["end"]["sum_sent"]["retransmits"] > 0
    assert stats["rev"]["drop_aqm_packets"] == 0
    return fwd


@pytest.mark.lab
def test_codel_keeps_bulk_flow_queue_near_target(make_lab):
    # Drop-tail lets one CUBIC flow stand ~120 ms of queue in the 5-BDP buffer (measured:
    # 123 ms mean sojourn, 84 drops at the top). CoDel drops at the head once the sojourn
    # stayed above 5 ms for 100 ms, so the flow backs off long before the buffer fills and
    # the queue's mean stays near the target.
    fwd = _bulk_cubic_through(make_lab, "codel")
    assert (fwd["codel_target_us"], fwd["codel_interval_us"]) == (5000.0, 100000.0)
    # slow-start's burst may stand for CoDel's first interval; after it the target holds
    assert fwd["sojourn_mean_us"] <= 3 * 5000, fwd


@pytest.mark.lab
def test_pie_keeps_bulk_flow_queue_near_target(make_lab):
    # The same buffer under PIE (RFC 8033, sch_pie's defaults): after its first 150 ms burst
    # it drops arrivals with a probability that rises while the queue's delay is above 15 ms,
    # so CUBIC backs off long before the buffer fills, and by drops spread in time (not a
    # burst at the top): the mean wait stays near the target, where drop-tail's is 123 ms.
    fwd = _bulk_cubic_through(make_lab, "pie")
    assert (fwd["pie_target_us"], fwd["pie_tupdate_us"]) == (15000.0, 15000.0)
    assert fwd["sojourn_mean_us"] <= 3 * 15000, fwd
