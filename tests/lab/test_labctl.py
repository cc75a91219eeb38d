"""labctl: the command line, the named paths, and teardown that survives SIGKILL."""

import json
import os
import subprocess
import sys
import time

import pytest

from tests.lab.conftest import ROOT, labctl

LABCTL = [sys.executable, str(ROOT / "prober" / "lab" / "labctl.py")]


def test_labctl_units_bad_input_says_what_is_allowed():
    assert labctl.parse_rate("100M") == 100e6
    assert labctl.parse_rate("1.5G") == 1.5e9
    assert labctl.parse_size("256K") == 262144
    assert labctl.parse_time_ms("0.14s") == 140.0
    with pytest.raises(ValueError, match="bad rate 'fast': use a number of bit/s"):
        labctl.parse_rate("fast")
    with pytest.raises(ValueError, match=r"bad loss 1.5 \(allowed: a probability in \[0, 1\)\)"):
        labctl.PathSpec(name="x", loss=1.5)
    with pytest.raises(ValueError, match=r"bad server_window with iperf3 \(allowed only with server iperf2"):
        labctl.PathSpec(name="x", server_window="256K")
    assert labctl.PathSpec(name="x", server="iperf2", server_window="256K").port == 5001


def test_labctl_paths_json_has_the_paper_paths():
    paths = labctl.load_paths()
    assert {"caltech", "japan", "rice", "dialup", "lossy", "wan50"} <= set(paths)
    assert paths["japan"].rtt_ms == 140 and paths["japan"].bdp_bytes >= 4_000_000
    assert paths["rice"].server == "iperf2" and paths["rice"].server_window == "256K"
    assert paths["dialup"].rate_mbps == 1 and paths["lossy"].loss > 0


def _ns_users(inode: str) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/ns/net") == inode:
                pids.append(int(pid))
        except OSError:
            pass
    return pids


def _start_up(tmp_path, *args):
    env = dict(os.environ, QPLAB_STATE_DIR=str(tmp_path))
    p = subprocess.Popen(
        LABCTL + ["up", "--lab", "t", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    line = p.stdout.readline()
    if not line:
        p.wait(5)
        pytest.fail(f"labctl up failed: {p.stderr.read()}")
    return p, json.loads(line), env


@pytest.mark.lab
def test_labctl_killed_leaves_no_namespace_or_process(lab_ready, tmp_path):
    p, up, _ = _start_up(tmp_path, "--rate", "10M", "--rtt", "20ms", "--queue", "100K")
    try:
        inodes = [os.readlink(up["near_ns"]), os.readlink(up["far_ns"])]
        pids = [up["near_holder"], up["far_holder"], up["delayline"]]
        assert all(_ns_users(i) for i in inodes)
    finally:
        p.kill()
        p.wait(5)
        p.stdout.close()
        p.stderr.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (
        any(_ns_users(i) for i in inodes) or any(os.path.exists(f"/proc/{x}") for x in pids)
    ):
        time.sleep(0.05)
    assert [x for x in pids if os.path.exists(f"/proc/{x}")] == []
    assert [_ns_users(i) for i in inodes] == [[], []]


@pytest.mark.lab
def test_labctl_exec_then_down_tears_down(lab_ready, tmp_path):
    p, up, env = _start_up(tmp_path, "--path", "wan50")
    try:
        assert up["path"]["rtt_ms"] == 50 and up["far_addr"] == "10.99.0.2"
        r = subprocess.run(
            LABCTL + ["exec", "--lab", "t", "--", "ip", "-4", "-o", "addr"],
            capture_output=True,
            text=True,
            env=env,
            timeout=10,
        )
        assert r.returncode == 0, r.stderr
        assert "inet 10.99.0.1 peer 10.99.0.2/32" in r.stdout
        # The root namespace has no route into the lab.
        assert "10.99.0" not in subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
        r = subprocess.run(LABCTL + ["stats", "--lab", "t"], capture_output=True, text=True, env=env, timeout=15)
        assert r.returncode == 0, r.stderr
        stats = json.loads(r.stdout)
        assert stats["event"] == "stats" and stats["rev"]["delay_us"] == 25000
        assert stats["fwd"]["rate_bps"] == 100e6 and stats["fwd"]["queue_bytes"] == 625000
        r = subprocess.run(LABCTL + ["down", "--lab", "t"], capture_output=True, text=True, env=env, timeout=15)
        assert r.returncode == 0, r.stderr
        out, _ = p.communicate(timeout=10)
        assert p.returncode == 0
        final = json.loads(out.strip().splitlines()[-1])
        assert final["event"] == "exit" and final["fwd"]["delay_us"] == 25000
        assert not (tmp_path / "t.json").exists()
        r = subprocess.run(LABCTL + ["exec", "--lab", "t", "--", "true"], capture_output=True, text=True, env=env)
        assert r.returncode != 0 and "no lab named 't' is up" in r.stderr
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)


def test_labctl_without_root_says_why(tmp_path):
    if os.geteuid() != 0:
        assert labctl.lab_unavailable_reason() is not None
        return
    # Drop to nobody in a child: the lab must refuse with the reason the tests skip with.
    r = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import labctl; print(labctl.lab_unavailable_reason())",
            str(ROOT / "prober" / "lab"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "the path lab needs root (network namespaces and TUN devices)"
