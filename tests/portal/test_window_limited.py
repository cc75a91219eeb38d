"""Window-limited results: the peer window and rwnd-limited time the prober samples are kept in
the trace (and its CSV) and summarised into the result."""

import pytest

from portal.measure.results import TraceBuilder, trace_csv_rows, trace_summary


def _sample(t, streams):
    return {
        "event": "sample",
        "t": t,
        "inst_bps": 1e9,
        "cumu_bps": 1e9,
        "cwnd_bytes": 1000,
        "streams": [
            {
                "id": sid,
                "cwnd_bytes": 1000,
                "ssthresh_bytes": None,
                "rtt_us": 40,
                "bytes_acked": 10,
                "total_retrans": 0,
                "snd_wnd_bytes": wnd,
                "rwnd_limited_us": lim,
            }
            for sid, wnd, lim in streams
        ],
    }


def test_trace_keeps_peer_window_and_rwnd_limited():
    builder = TraceBuilder()
    builder.add_sample(_sample(0.5, [(1, 8192, 100_000)]))
    builder.add_sample(_sample(1.0, [(1, 8192, 600_000)]))
    trace = builder.to_dict()
    assert trace["streams"][0]["snd_wnd_bytes"] == [8192, 8192]
    assert trace["streams"][0]["rwnd_limited_us"] == [100_000, 600_000]
    rows = list(trace_csv_rows(trace))
    assert rows[0][-2:] == ["s1_snd_wnd_bytes", "s1_rwnd_limited_us"]
    assert rows[2][-2:] == [8192, 600_000]


def test_trace_summary_share_of_run_over_streams():
    builder = TraceBuilder()
    builder.add_sample(_sample(1.0, [(1, 8192, 300_000), (3, 8192, 900_000)]))
    builder.add_sample(_sample(2.0, [(1, 8192, 400_000), (3, 16384, 1_200_000)]))
    # (0.4 s + 1.2 s) of 2 x 2 s = 40 %; the peer windows at the end add up.
    assert trace_summary(builder.to_dict()) == {
        "peer_window_bytes": 24576,
        "rwnd_limited_pct": pytest.approx(40.0),
        "window_limited": True,
    }


def test_trace_summary_below_threshold_not_limited():
    builder = TraceBuilder()
    builder.add_sample(_sample(1.0, [(1, 27_000_000, 52_000)]))
    assert trace_summary(builder.to_dict()) == {
        "peer_window_bytes": 27_000_000,
        "rwnd_limited_pct": pytest.approx(5.2),
        "window_limited": False,
    }


def test_trace_summary_older_trace_without_fields_is_unknown():
    from tests.factories import sample_trace_dict

    assert trace_summary(sample_trace_dict()) == {
        "peer_window_bytes": None,
        "rwnd_limited_pct": None,
        "window_limited": None,
    }
    # And its CSV keeps the columns it always had.
    assert list(trace_csv_rows(sample_trace_dict()))[0][-1] == "s1_total_retrans"
