"""Plain factory functions for the portal tests: every argument has a sensible default and
every default is visible here, so a test states only what it cares about."""

import itertools

from django.contrib.auth import get_user_model
from django.utils import timezone

from portal.measure.models import Measurement, MeasurementTrace, Site, Vantage

_seq = itertools.count(1)


def make_user(username=None, password="pw-for-tests-only", **extra):
    username = username or f"user{next(_seq)}"
    return get_user_model().objects.create_user(username=username, password=password, **extra)


def make_site(**overrides):
    n = next(_seq)
    fields = dict(
        name=f"Site {n}",
        slug=f"site-{n}",
        host="127.0.0.1",
        port=5201,
        protocol="iperf3",
        location="Loopback",
        notes="",
        enabled=True,
    )
    fields.update(overrides)
    return Site.objects.create(**fields)


def make_vantage(**overrides):
    n = next(_seq)
    fields = dict(
        name=f"vantage-{n}",
        description="test vantage",
        kernel="6.1.0",
        congestion_controls=["reno", "cubic", "bbr"],
        last_seen=timezone.now(),
        enabled=True,
    )
    fields.update(overrides)
    return Vantage.objects.create(**fields)


def make_measurement(site=None, vantage=None, **overrides):
    fields = dict(
        site=site or make_site(),
        vantage=vantage or make_vantage(),
        mode="quick",
        duration_s=10,
        streams=1,
        window_bytes=None,
        congestion="",
        status="queued",
    )
    fields.update(overrides)
    return Measurement.objects.create(**fields)


def sample_trace_dict(n=5, streams=(1,), slow_start_end_s=0.04):
    """A small, exactly known trace in the shape MeasurementTrace.to_dict() returns."""
    t = [round(0.02 * (i + 1), 3) for i in range(n)]
    return {
        "t": t,
        "inst_bps": [1.0e9 * (i + 1) for i in range(n)],
        "cumu_bps": [0.5e9 * (i + 1) for i in range(n)],
        "cwnd_bytes": [65483 * 10 * (i + 1) * len(streams) for i in range(n)],
        "streams": [
            {
                "id": sid,
                "cwnd_bytes": [65483 * 10 * (i + 1) for i in range(n)],
                "ssthresh_bytes": [None if i < 2 else 65483 * 20 for i in range(n)],
                "rtt_us": [40 + i for i in range(n)],
                "bytes_acked": [1_000_000 * (i + 1) for i in range(n)],
                "total_retrans": [0] * n,
            }
            for sid in streams
        ],
        "slow_start_end_s": slow_start_end_s,
    }


def sample_result_event(**overrides):
    """A `result` event as prober/EVENTS.md specifies it (quick mode entered)."""
    event = {
        "event": "result",
        "mode": "quick",
        "quick_mode_entered": True,
        "quick_bps": 9.3e9,
        "cumulative_bps": 8.1e9,
        "full_bps": None,
        "bytes_sent": 1234567890,
        "bytes_acked": 1234567890,
        "server_bytes": 1234500000,
        "elapsed_s": 1.86,
        "slow_start_end_s": 0.84,
        "rule": "paper_cwnd_stable",
        "quick_window_s": 1.0,
        "retransmits": 0,
        "rtt_us": 45,
        "min_rtt_us": 12,
        "congestion": "bbr",
        "mss_bytes": 65483,
        "window": {"requested_bytes": None, "given_bytes": 2626560},
        "full_time_s": 10,
        "full_bytes_estimate": 11625000000,
        "time_saved_pct": 81.4,
        "traffic_saved_pct": 89.4,
        "validate": None,
        "interrupted": False,
        "streams": [
            {"id": 1, "bytes_sent": 1234567890, "bytes_acked": 1234567890, "server_bytes": 1234500000, "retransmits": 0}
        ],
    }
    event.update(overrides)
    return event


def make_done_measurement(site=None, vantage=None, trace=None, result=None, **overrides):
    """A finished measurement with results copied from a result event and a stored trace."""
    from portal.measure.results import result_fields

    result = result or sample_result_event()
    now = timezone.now()
    fields = dict(status="done", started_at=now - timezone.timedelta(seconds=3), finished_at=now, heartbeat_at=now)
    fields.update(result_fields(result))
    fields.update(overrides)
    measurement = make_measurement(site=site, vantage=vantage, **fields)
    MeasurementTrace.from_dict(measurement, trace or sample_trace_dict()).save()
    return measurement
