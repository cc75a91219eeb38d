"""bench_quick's arithmetic: the paper's slow-start formula, the steady-state reference."""
import importlib.util
import sys

import pytest

from tests.lab.conftest import ROOT, labctl

_spec = importlib.util.spec_from_file_location("bench_quick", ROOT / "prober" / "bench" / "bench_quick.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_quick"] = bench   # dataclasses look their module up there
_spec.loader.exec_module(bench)


def test_bench_paper_formula_named_paths():
    paths = labctl.load_paths()
    # caltech: 900000 B / 8948 B = 100.6 segments -> ceil(log2) = 7 RTTs of 24 ms
    assert bench.paper_ss_s(bench.Row(paths["caltech"], "reno"), 8948) == pytest.approx(0.168)
    # rice: the server's 256 KB window, not the 1.69 MB BDP: 29.3 segments -> 5 x 45 ms
    assert bench.paper_ss_s(bench.Row(paths["rice"], "cubic"), 8948) == pytest.approx(0.225)
    # japan, 4 streams: 5.25 MB / 4 / 8948 B = 146.7 segments -> 8 x 140 ms
    assert bench.paper_ss_s(bench.Row(paths["japan"], "reno", 4), 8948) == pytest.approx(1.12)


def test_bench_rate_after_ss_uses_the_runs_own_slow_start_end():
    events = [{"event": "start"}]
    for i in range(0, 301):
        t = i * 0.01
        # 10 MB/s before t = 1 s, then 20 MB/s
        acked = int(10e6 * min(t, 1.0) + 20e6 * max(0.0, t - 1.0))
        events.append({"event": "sample", "t": t, "bytes_acked": acked})
        if i == 100:
            events.append({"event": "slow_start_end", "t": 1.0})
    assert bench.rate_after_ss(events) == pytest.approx(160.0, rel=1e-6)
    assert bench.rate_after_ss([e for e in events if e["event"] != "slow_start_end"]) is None


def test_bench_percentile_interpolates():
    assert bench.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90) == pytest.approx(9.1)
    assert bench.percentile([5.0], 90) == 5.0
    assert bench.percentile([], 90) is None
