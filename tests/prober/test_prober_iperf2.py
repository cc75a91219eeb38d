"""quickprobe --iperf2 against a real `iperf -s`: its byte count must match the server's own
report exactly. The server leaves out the 4 flag bytes each connection starts with, and so
does the prober's bytes_sent (like the stock iperf 2 client, whose figure equals the
server's): both count the payload only."""

import pytest

from tests.prober import qp

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("streams", [1, 2])
def test_iperf2_bytes_match_server_report(iperf2_server, streams):
    run = qp.run_qp("--iperf2", "-c", "127.0.0.1", "-p", iperf2_server.port, "-P", streams, "--mode", "full", "-t", 1)
    assert run.rc == 0, run
    res = run.last
    assert res["event"] == "result", run
    assert run.one("start")["protocol"] == "iperf2"
    assert res["server_bytes"] is None
    assert all(s["server_bytes"] is None for s in res["streams"])
    assert [s["id"] for s in res["streams"]] == list(range(1, streams + 1))
    per_conn = qp.iperf2_server_bytes(iperf2_server.stop())
    assert len(per_conn) == streams, per_conn
    assert sorted(per_conn) == sorted(s["bytes_sent"] for s in res["streams"])
    assert sum(per_conn) == res["bytes_sent"]


def test_iperf2_quick_mode_ends_early(iperf2_server):
    # a loose tolerance: loopback's rate swings with the machine's load (see
    # qp.answered_loopback_run)
    run = qp.answered_loopback_run(
        "--iperf2", "-c", "127.0.0.1", "-p", iperf2_server.port, "-t", 10, "--quick-tolerance", 50
    )
    res = run.last
    assert res["quick_mode_entered"] is True
    assert res["rule"] in qp.RULES
    # --quick-ms after slow-start, or --quick-max-ms (4 s) where the rate changed level
    # (loopback's bottleneck is the CPU, and the scheduler moves it)
    assert res["elapsed_s"] < (res["slow_start_end_s"] + 4.5 if res["quick_held_by"] == "varying" else 3), res
    per_conn = qp.iperf2_server_bytes(iperf2_server.stop())
    assert per_conn == [res["bytes_sent"]]


@pytest.mark.parametrize("streams", [1, 3])
def test_iperf2_server_closing_at_once_gives_server_closed(fake_server, streams):
    """iperf 2 has no busy answer: a server that accepts and closes at once (here one that
    waits for the data to arrive unread, so the close is always a reset) is server_closed,
    not an `io` fault, so the portal does not retry it as busy nor blame the vantage."""
    fake = fake_server("close_unread")
    run = qp.run_qp(
        "--iperf2", "-c", "127.0.0.1", "-p", fake.port, "-P", streams, "-t", 2, "--connect-timeout", 1, timeout=20
    )
    assert run.rc == 1, run
    err = run.last
    assert err["event"] == "error" and err["code"] == "server_closed", run
    assert "closed data stream" in err["message"] and "at once" in err["message"], err
    assert run.wall_s < 2, run
