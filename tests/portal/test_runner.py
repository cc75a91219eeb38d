"""The runner against the real prober and real iperf servers on loopback."""

import os
import signal
import socket
import threading
import time

import pytest

from portal.measure import progress, runner
from portal.measure.models import Measurement, MeasurementTrace
from tests import factories, servers


def _run(pk, **kwargs):
    runner.run(pk, **kwargs)
    return Measurement.objects.get(pk=pk)


def test_runner_quick_iperf3_done_with_trace(db, quickprobe_bin, iperf3_port, vantage):
    site = factories.make_site(port=iperf3_port)
    m = _run(factories.make_measurement(site=site, vantage=vantage, duration_s=5).pk)
    assert m.status == "done", m.failure_reason
    assert m.result["event"] == "result" and m.result["mode"] == "quick"
    # Columns are the result event's values, unchanged.
    assert m.quick_mode_entered is m.result["quick_mode_entered"]
    assert (m.quick_bps, m.cumulative_bps, m.bytes_sent, m.elapsed_s) == (
        m.result["quick_bps"],
        m.result["cumulative_bps"],
        m.result["bytes_sent"],
        m.result["elapsed_s"],
    )
    assert m.window_given_bytes == m.result["window"]["given_bytes"]
    assert m.congestion_used == m.result["congestion"] != ""
    assert m.full_time_s == 5 and m.headline_bps > 0
    assert m.started_at <= m.finished_at and m.failure_code == ""
    trace = m.trace.to_dict()
    n = len(trace["t"])
    assert n >= 5 and trace["t"] == sorted(trace["t"])
    assert len(trace["inst_bps"]) == len(trace["cwnd_bytes"]) == n
    assert [s["id"] for s in trace["streams"]] == [1]
    assert len(trace["streams"][0]["rtt_us"]) == n
    assert trace["slow_start_end_s"] == m.slow_start_end_s
    assert progress.read(m.pk)["phase"] == "done"


def test_runner_streams_window_congestion_passed(db, quickprobe_bin, iperf3_port, vantage):
    site = factories.make_site(port=iperf3_port)
    m = _run(
        factories.make_measurement(
            site=site, vantage=vantage, duration_s=3, streams=2, window_bytes=131072, congestion="cubic"
        ).pk
    )
    assert m.status == "done", m.failure_reason
    assert m.window_requested_bytes == 131072
    assert m.congestion_used == "cubic"
    assert len(m.result["streams"]) == 2
    assert len(m.trace.to_dict()["streams"]) == 2


def test_runner_iperf2_full_done(db, quickprobe_bin, iperf2_port, vantage):
    site = factories.make_site(port=iperf2_port, protocol="iperf2")
    m = _run(factories.make_measurement(site=site, vantage=vantage, mode="full", duration_s=1).pk)
    assert m.status == "done", m.failure_reason
    assert m.full_bps == m.cumulative_bps > 0
    assert m.server_bytes is None  # iperf 2 reports nothing back
    assert m.time_saved_pct is None


def test_runner_connect_refused_failed_with_prober_message(db, quickprobe_bin, vantage):
    port = servers.free_port()  # nothing listens there
    site = factories.make_site(port=port)
    m = _run(factories.make_measurement(site=site, vantage=vantage).pk)
    assert (m.status, m.failure_code) == ("failed", "connect_refused")
    assert m.failure_reason == f"connect to 127.0.0.1 port {port}: Connection refused"
    assert not MeasurementTrace.objects.filter(pk=m.pk).exists()


def test_runner_server_busy_retries_then_fails(db, quickprobe_bin, iperf3_port, vantage, settings):
    """iperf3 serves one client at a time: a second client is refused while a first runs."""
    settings.SERVER_BUSY_RETRIES = 1
    site = factories.make_site(port=iperf3_port)
    import subprocess

    other = subprocess.Popen(
        [quickprobe_bin, "-c", "127.0.0.1", "-p", str(iperf3_port), "--mode", "full", "-t", "8", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # Wait until the other client's data flows: from then on the server refuses newcomers.
        for line in other.stdout:
            if b'"event":"sample"' in line:
                break
        else:
            pytest.fail("the other client never started its test")
        m = factories.make_measurement(site=site, vantage=vantage)
        with pytest.raises(runner.TryLater) as info:
            runner.run(m.pk)
        assert info.value.kwargs == {"site_busy_attempts": 0, "server_busy_attempts": 1}
        m.refresh_from_db()
        assert (m.status, m.started_at) == ("queued", None)  # released for the retry
        m = _run(m.pk, server_busy_attempts=1)
        assert (m.status, m.failure_code) == ("failed", "server_busy")
        assert m.failure_reason.startswith(
            f"the iperf server at 127.0.0.1:{iperf3_port} was busy with another client's test on 2 attempts; last answer: "
        )
    finally:
        servers.stop(other)


def test_runner_silent_server_overran_killed(db, quickprobe_bin, vantage, settings):
    """A hostile server that accepts and never answers: the wall-clock limit ends it."""
    settings.PROBER_MARGIN_S = 0.5
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        site = factories.make_site(port=port)
        m = factories.make_measurement(site=site, vantage=vantage, duration_s=1)
        started = time.monotonic()
        m = _run(m.pk)
        took = time.monotonic() - started
    assert (m.status, m.failure_code) == ("failed", "overran")
    assert (
        m.failure_reason
        == "prober overran: still running 1.5 s after it started (limit: duration 1 s + margin 0.5 s); it was killed."
    )
    assert took < 5  # not the prober's own 5 s protocol timeout
    assert servers.processes_with(f"-p {port} ") == []


def test_runner_prober_killed_failed_with_signal(transactional_db, quickprobe_bin, iperf3_port, vantage):
    site = factories.make_site(port=iperf3_port)
    m = factories.make_measurement(site=site, vantage=vantage, mode="full", duration_s=10)
    needle = f"-p {iperf3_port} -t 10"

    def kill_prober():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pids = servers.processes_with(needle)
            if pids:
                time.sleep(0.5)
                os.kill(pids[0], signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_prober)
    killer.start()
    m = _run(m.pk)
    killer.join()
    assert (m.status, m.failure_code) == ("failed", "prober_crashed")
    assert m.failure_reason.startswith("the prober was killed by SIGKILL without a result or error event; stderr: ")


def test_runner_reaped_mid_run_stops_prober(transactional_db, quickprobe_bin, iperf3_port, vantage, settings):
    settings.HEARTBEAT_TEST_S = 0.2
    site = factories.make_site(port=iperf3_port)
    m = factories.make_measurement(site=site, vantage=vantage, mode="full", duration_s=10)

    def reap_soon():
        time.sleep(1.0)
        from django.db import connection

        runner.fail(m.pk, "worker_lost", "declared lost by the test", from_statuses=("running",))
        connection.close()

    reaper = threading.Thread(target=reap_soon)
    started = time.monotonic()
    reaper.start()
    m = _run(m.pk)
    reaper.join()
    assert time.monotonic() - started < 6  # stopped, not run to its 10 s
    # The reaper's verdict stands; the runner did not overwrite it with a result.
    assert (m.status, m.failure_code, m.failure_reason) == ("failed", "worker_lost", "declared lost by the test")
    assert servers.processes_with(f"-p {iperf3_port} -t 10") == []


def test_runner_missing_binary_failed(db, vantage, settings, site):
    settings.QUICKPROBE_BIN = "/nonexistent/quickprobe"
    m = _run(factories.make_measurement(site=site, vantage=vantage).pk)
    assert (m.status, m.failure_code) == ("failed", "prober_missing")
    assert m.failure_reason == "cannot start the prober /nonexistent/quickprobe: No such file or directory"


def test_runner_garbage_server_failed_protocol(db, quickprobe_bin, vantage):
    """A hostile server that answers the cookie with garbage: the prober's error is stored as is."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]

        def serve():
            conn, _ = listener.accept()
            with conn:
                conn.recv(37)  # the iperf3 cookie
                conn.sendall(b"\x42garbage" * 10)

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        m = _run(factories.make_measurement(site=factories.make_site(port=port), vantage=vantage).pk)
        server.join(5)
    assert (m.status, m.failure_code) == ("failed", "protocol")
    assert m.failure_reason == "unexpected state 66 from the server (expected 9)"
    assert progress.read(m.pk)["phase"] == "failed"
