"""`make run`'s second demo site: an emulated WAN path from the path lab (root only), measured
by real tests on start and through the API, and gone when make run stops. Without root the
front page says why loopback is the only demo site."""

import json
import os
import re
import signal
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests import servers

pytestmark = pytest.mark.e2e

sys.path.insert(0, str(servers.REPO / "prober" / "lab"))
import labctl  # noqa: E402


def _api(port, token, path, data=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/{path}", data=data, headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _finished(port, token, slug, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _api(port, token, f"measurements/{slug}")
        if state["status"] in ("done", "failed"):
            return state
        time.sleep(0.3)
    raise AssertionError(f"measurement {slug} not finished in {timeout} s: {state}")


def _namespaces_in_use():
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            found.add(os.readlink(proc / "ns" / "net"))
        except OSError:
            continue
    return found


def test_make_run_lab_site_measures_slow_start_and_goes_with_make_run(tmp_path, quickprobe_bin):
    reason = labctl.lab_unavailable_reason()
    if reason:
        pytest.skip(reason)
    port = servers.free_port()
    env = servers.make_run_env(tmp_path)
    env.pop("DEMO_LAB", None)
    env.update(PORT=str(port), VANTAGE_NAME="labcheck")
    proc, log = servers.start_make_run(tmp_path, env)
    try:
        servers.wait_make_run(proc, log)
        text = log.read_text()
        token = re.search(r"export TOKEN=(\S+)", text).group(1)
        namespaces = re.search(r"lab:      namespaces (net:\[\d+\]) (net:\[\d+\])", text).groups()
        assert set(namespaces) <= _namespaces_in_use()
        first = dict(re.findall(r"first:    a quick test of (\S+) is queued: \S+/m/([\w-]+)/", text))
        assert sorted(first) == ["lab-wan", "local-iperf3"]

        sites = {s["slug"]: s for s in _api(port, token, "sites")["sites"]}
        assert sites["lab-wan"]["host"] == labctl.FAR_ADDR and sites["lab-wan"]["port"] == labctl.IPERF3_PORT
        front = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
        note = re.search(r'<p class="small muted demo-note" id="demo-note-lab-wan">(.*?)</p>', front, re.S).group(1)
        assert "emulated WAN: 100 Mbit/s, 40 ms RTT, 500 kB buffer (one BDP), MTU 1500" in note
        assert 'id="demo-note-local-iperf3"' in front and "loopback" in front

        # The demo history: make run's own first tests, real and done.
        lab_first = _finished(port, token, first["lab-wan"])
        loop_first = _finished(port, token, first["local-iperf3"])
        assert lab_first["status"] == "done" and loop_first["status"] == "done", (lab_first, loop_first)

        # A test a user asks for, as the README's curl does (no vantage: there is one).
        asked = _api(port, token, "measurements", data=b"site=lab-wan&mode=quick")
        lab = _finished(port, token, asked["id"])
        assert lab["status"] == "done", lab
        assert lab["vantage"] == "labcheck" and lab["mode"] == "quick"
        # 100 Mbit/s is the IP-level rate: goodput is below it, and far from loopback's Gbit/s.
        assert 50e6 < lab["headline_bps"] <= 100e6, lab["headline_bps"]
        lab_ss, loop_ss = lab["results"]["slow_start_end_s"], loop_first["results"]["slow_start_end_s"]
        # Slow-start needs round trips: a 40 ms path cannot leave it within one RTT, loopback can.
        assert lab_ss > 0.04 and lab_ss > loop_ss, (lab_ss, loop_ss)
        assert lab_first["results"]["slow_start_end_s"] > 0.04

        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, log.read_text()[-3000:]
        text = log.read_text()
        assert "[run] path lab torn down" in text and text.rstrip().endswith("[run] stopped")
        assert not set(namespaces) & _namespaces_in_use()
        assert servers.processes_with(str(tmp_path)) == []
    finally:
        servers.stop(proc)
        for pid in servers.processes_with(str(tmp_path)) + servers.processes_with(f"127.0.0.1:{port}"):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.django_db
def test_demo_without_lab_says_why_loopback_is_the_only_site(client):
    from portal.measure.demo import LAB_SITE_SLUG, setup_demo, setup_lab_site
    from portal.measure.models import Site

    setup_demo(5201, password="pw-for-tests-only")
    assert setup_lab_site("10.99.0.2", 5201) is not None  # an earlier run that had root
    assert setup_lab_site(None, None, "the path lab needs root (network namespaces and TUN devices)") is None
    assert Site.objects.get(slug=LAB_SITE_SLUG).enabled is False
    page = client.get("/").content.decode()
    assert 'id="demo-note-lab-wan"' not in page
    note = re.search(r'id="demo-note-local-iperf3">(.*?)</p>', page, re.S).group(1)
    assert (
        "It is the only demo site: the second one, an emulated WAN path (100 Mbit/s, 40 ms RTT, 500 kB "
        "buffer (one BDP), MTU 1500), needs the path lab, and the path lab needs root (network namespaces "
        "and TUN devices)." in note
    )
