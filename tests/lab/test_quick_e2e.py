"""Quick mode end to end over an emulated 50 ms path: the prober against a real iperf3 -s."""

import json

import pytest

from tests.lab.conftest import labctl


def probe(lab, quickprobe, *args):
    r = lab.run(
        [str(quickprobe), "-c", lab.far_addr, "-p", str(lab.port), "--json", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, f"exit {r.returncode}; stdout {r.stdout[-2000:]!r}; stderr {r.stderr!r}"
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events[0]["event"] == "start" and events[-1]["event"] == "result"
    return events


@pytest.mark.lab
def test_quick_mode_wan50_close_to_full_run(make_lab, quickprobe):
    path = labctl.load_paths()["wan50"]
    lab = make_lab(**{k: getattr(path, k) for k in labctl.PathSpec.__dataclass_fields__})
    rtt_s = path.rtt_ms / 1e3
    quick = probe(lab, quickprobe, "--mode", "quick", "-t", "10")
    result = quick[-1]
    assert result["quick_mode_entered"] is True
    ends = [e for e in quick if e["event"] == "slow_start_end"]
    assert len(ends) == 1
    # Slow-start on a 50 ms path takes several RTTs; an end within the first RTT would be
    # the loopback-style false positive this lab exists to catch.
    assert ends[0]["t"] > rtt_s
    assert result["elapsed_s"] < 5
    full = probe(lab, quickprobe, "--mode", "full", "-t", "5")[-1]
    assert full["full_bps"] > 0.8 * path.rate_bps
    error = abs(result["quick_bps"] - full["full_bps"]) / full["full_bps"]
    assert error <= 0.15, (result["quick_bps"], full["full_bps"])
