"""Runner pieces that need no prober: claiming, heartbeats, storing, line and trace handling.
The runner against the real prober is in test_runner.py."""

import pytest
from django.db import IntegrityError

from portal.measure import progress, runner
from portal.measure.models import Measurement, MeasurementTrace
from portal.measure.results import TraceBuilder
from tests import factories
from workers import prober


def test_claim_queued_once_only(measurement):
    assert runner.claim(measurement.pk) is True
    assert runner.claim(measurement.pk) is False  # a task delivered twice does nothing the second time
    measurement.refresh_from_db()
    assert measurement.status == "running" and measurement.started_at and measurement.heartbeat_at


def test_claim_second_of_same_site_integrity_error(site, make_vantage):
    first = factories.make_measurement(site=site, vantage=make_vantage())
    second = factories.make_measurement(site=site, vantage=make_vantage())
    assert runner.claim(first.pk)
    with pytest.raises(IntegrityError):
        runner.claim(second.pk)
    assert Measurement.objects.get(pk=second.pk).status == "queued"


def test_run_site_busy_raises_try_later_with_backoff(site, make_vantage, settings):
    settings.RETRY_BASE_S = 2.0
    running = factories.make_measurement(site=site, vantage=make_vantage(), status="running")
    waiting = factories.make_measurement(site=site, vantage=make_vantage())
    with pytest.raises(runner.TryLater) as info:
        runner.run(waiting.pk, site_busy_attempts=2)
    assert info.value.kwargs == {"site_busy_attempts": 3, "server_busy_attempts": 0}
    assert 8 * 0.8 <= info.value.countdown <= 8 * 1.2
    assert Measurement.objects.get(pk=waiting.pk).status == "queued"
    assert running.pk != waiting.pk


def test_run_site_busy_exhausted_fails(site, make_vantage, settings):
    settings.SITE_BUSY_RETRIES = 3
    factories.make_measurement(site=site, vantage=make_vantage(), status="running")
    waiting = factories.make_measurement(site=site, vantage=make_vantage())
    assert runner.run(waiting.pk, site_busy_attempts=3) is None
    waiting.refresh_from_db()
    assert (waiting.status, waiting.failure_code) == ("failed", "site_busy")
    assert waiting.failure_reason == "the site stayed busy with other measurements through 4 attempts; try again later."


def test_heartbeat_false_once_reaped(measurement):
    runner.claim(measurement.pk)
    assert runner.heartbeat(measurement.pk) is True
    runner.fail(measurement.pk, "worker_lost", "gone")
    assert runner.heartbeat(measurement.pk) is False


def test_store_result_only_while_running(measurement):
    event = factories.sample_result_event()
    assert runner.store_result(measurement.pk, event, factories.sample_trace_dict()) is False  # still queued
    runner.claim(measurement.pk)
    assert runner.store_result(measurement.pk, event, factories.sample_trace_dict()) is True
    m = Measurement.objects.get(pk=measurement.pk)
    assert (m.status, m.quick_bps, m.trace.to_dict()) == ("done", 9.3e9, factories.sample_trace_dict())
    assert progress.read(measurement.pk)["phase"] == "done"


def test_prober_command_from_parameters(db, vantage):
    site = factories.make_site(host="iperf.example.org", port=5002, protocol="iperf2")
    m = factories.make_measurement(
        site=site, vantage=vantage, mode="validate", duration_s=20, streams=4, window_bytes=262144, congestion="cubic"
    )
    cmd = runner.prober_command(m)
    assert cmd[1:] == [
        "-c",
        "iperf.example.org",
        "-p",
        "5002",
        "-t",
        "20",
        "-P",
        "4",
        "--mode",
        "validate",
        "--json",
        "--iperf2",
        "-w",
        "256K",
        "-C",
        "cubic",
    ]


def test_line_reader_splits_and_bounds_lines():
    reader = prober.LineReader(limit=10)
    assert reader.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert reader.feed(b":2}\n") == [b'{"b":2}']
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        reader.feed(b"x" * 11)


def test_event_sink_rejects_non_json_line(measurement):
    sink = runner.EventSink(measurement.pk)
    with pytest.raises(ValueError, match="not JSON"):
        sink.handle_line(b"Segmentation fault")
    with pytest.raises(ValueError, match="not an event object"):
        sink.handle_line(b"[1,2]")


NO_BBR = {f"bbr_{k}": [None, None] for k in ("mode", "bw_bps", "min_rtt_us", "pacing_gain", "cwnd_gain")}


def test_trace_builder_late_and_missing_streams_padded():
    builder = TraceBuilder()
    builder.add_sample(
        {
            "t": 0.02,
            "inst_bps": 1.0,
            "cumu_bps": 1.0,
            "cwnd_bytes": 10,
            "streams": [
                {"id": 1, "cwnd_bytes": 10, "ssthresh_bytes": None, "rtt_us": 5, "bytes_acked": 100, "total_retrans": 0}
            ],
        }
    )
    builder.add_sample(
        {
            "t": 0.04,
            "inst_bps": 2.0,
            "cumu_bps": 1.5,
            "cwnd_bytes": 30,
            "streams": [
                {"id": 3, "cwnd_bytes": 30, "ssthresh_bytes": 40, "rtt_us": 6, "bytes_acked": 200, "total_retrans": 1}
            ],
        }
    )
    d = builder.to_dict()
    assert d["t"] == [0.02, 0.04]
    assert d["streams"] == [
        {
            "id": 1,
            "cwnd_bytes": [10, None],
            "ssthresh_bytes": [None, None],
            "rtt_us": [5, None],
            "bytes_acked": [100, None],
            "total_retrans": [0, None],
            "snd_wnd_bytes": [None, None],
            "rwnd_limited_us": [None, None],
            **NO_BBR,
        },
        {
            "id": 3,
            "cwnd_bytes": [None, 30],
            "ssthresh_bytes": [None, 40],
            "rtt_us": [None, 6],
            "bytes_acked": [None, 200],
            "total_retrans": [None, 1],
            "snd_wnd_bytes": [None, None],
            "rwnd_limited_us": [None, None],
            **NO_BBR,
        },
    ]


def test_decimator_bounded_and_evenly_spaced():
    d = progress.Decimator(limit=300)
    for i in range(3000):
        d.add({"t": i * 0.02, "inst_bps": float(i), "cumu_bps": 0.0, "cwnd_bytes": i, "extra": "dropped"})
    assert len(d.samples) <= 300
    assert len(d.samples) >= 150
    steps = {round(b["t"] - a["t"], 6) for a, b in zip(d.samples, d.samples[1:])}
    assert steps == {round(0.02 * d.stride, 6)}
    assert d.samples[0] == {"t": 0.0, "inst_bps": 0.0, "cumu_bps": 0.0, "cwnd_bytes": 0}


def test_progress_read_falls_back_to_status(done_measurement, measurement):
    progress.clear(done_measurement.pk)
    progress.clear(measurement.pk)
    assert progress.read(done_measurement.pk) == {"phase": "done", "elapsed_s": 0.0, "samples": []}
    assert progress.read(measurement.pk) == {"phase": "queued", "elapsed_s": 0.0, "samples": []}
    progress.write(measurement.pk, "slow_start", 0.5, [{"t": 0.5, "inst_bps": 1.0, "cumu_bps": 1.0, "cwnd_bytes": 2}])
    assert progress.read(measurement.pk)["phase"] == "slow_start"
    progress.clear(measurement.pk)


def test_trace_table_not_loaded_by_measurement_queries(done_measurement, django_assert_num_queries):
    with django_assert_num_queries(1):
        m = Measurement.objects.get(pk=done_measurement.pk)
        assert m.quick_bps == 9.3e9
    assert MeasurementTrace.objects.filter(pk=done_measurement.pk).exists()


def test_progress_cache_namespace_private_to_test(measurement, cache_key_prefix):
    from django.core.cache import cache

    from tests.conftest import CACHE_KEY_PREFIX

    assert cache_key_prefix.startswith(CACHE_KEY_PREFIX + "-")
    progress.write(measurement.pk, "measuring", 1.0)
    assert (
        cache.make_key(f"measure:progress:{measurement.pk}")
        == f"{cache_key_prefix}:1:measure:progress:{measurement.pk}"
    )
    progress.clear(measurement.pk)


def test_run_internal_error_fails_row_not_left_running(measurement, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("simulated bug in the runner")

    monkeypatch.setattr(runner, "run_prober", broken)
    with pytest.raises(RuntimeError, match="simulated bug"):
        runner.run(measurement.pk)
    measurement.refresh_from_db()
    assert (measurement.status, measurement.failure_code) == ("failed", "internal")
    assert measurement.failure_reason == (
        "the worker hit an internal error while running the measurement (see the worker's log)."
    )
