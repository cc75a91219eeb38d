"""The site's address is judged when its test starts, not only when the site was saved: the
worker resolves the name once, refuses a loopback / private / metadata answer before any
packet is sent, and hands the prober the numeric address it judged. Traffic only to loopback:
a refusal is asserted by a loopback listener that never sees a connection."""

import socket

import pytest

from portal.measure import hosts, runner
from portal.measure.models import Measurement
from tests import factories

PUBLIC = "134.79.1.1"


def fake_getaddrinfo(answers):
    """A resolver that answers from a dict (name -> [addresses]) and never asks DNS."""

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        out = []
        for address in answers[host]:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (address, 0, 0, 0) if family == socket.AF_INET6 else (address, 0)
            out.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
        return out

    return getaddrinfo


@pytest.fixture
def listener():
    """A loopback TCP listener standing in for the site: it must never be connected to."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def _connections(sock):
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return 0
    conn.close()
    return 1


def test_runner_site_now_resolving_to_loopback_refused_before_connect(
    db, quickprobe_bin, vantage, settings, monkeypatch, listener
):
    """Finding 1: saved while `localhost` resolved public; at test time it is 127.0.0.1."""
    settings.ALLOW_PRIVATE_SITE_HOSTS = False
    port = listener.getsockname()[1]
    with monkeypatch.context() as patch:
        patch.setattr(hosts, "getaddrinfo", fake_getaddrinfo({"localhost": [PUBLIC]}))
        site = factories.make_site(host="localhost", port=port)
        site.full_clean()  # the admin's check passes: the name is public now
    m = factories.make_measurement(site=site, vantage=vantage)
    runner.run(m.pk)
    m = Measurement.objects.get(pk=m.pk)
    assert (m.status, m.failure_code) == ("failed", "host_refused")
    assert m.failure_reason == (
        "the site's host 'localhost' resolved, when the test started, to an address the portal does not test "
        "(loopback, private, link-local, metadata or reserved; see ALLOW_PRIVATE_SITE_HOSTS); nothing was sent "
        "to it. The worker's log names the address."
    )
    assert "127.0.0.1" not in m.failure_reason
    assert m.public_failure_reason == (
        "when the test started, the site resolved to an address sites may not use; nothing was sent"
    )
    assert _connections(listener) == 0


@pytest.mark.parametrize(
    "answer",
    ["::127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "2002:a9fe:a9fe::1", "192.0.0.8", "10.0.0.1"],
)
def test_runner_site_resolving_to_embedded_private_refused(db, vantage, settings, monkeypatch, answer):
    """Finding 8 at test time: never handed to the prober (QUICKPROBE_BIN does not even exist)."""
    settings.ALLOW_PRIVATE_SITE_HOSTS = False
    settings.QUICKPROBE_BIN = "/nonexistent/quickprobe"
    monkeypatch.setattr(hosts, "getaddrinfo", fake_getaddrinfo({"site.example.net": [PUBLIC, answer]}))
    m = factories.make_measurement(site=factories.make_site(host="site.example.net"), vantage=vantage)
    runner.run(m.pk)
    m = Measurement.objects.get(pk=m.pk)
    assert (m.status, m.failure_code) == ("failed", "host_refused")
    assert answer not in m.failure_reason


def test_runner_unresolvable_name_failed_dns(db, vantage, settings, monkeypatch):
    settings.QUICKPROBE_BIN = "/nonexistent/quickprobe"
    monkeypatch.setattr(hosts, "getaddrinfo", fake_getaddrinfo({}))
    m = factories.make_measurement(site=factories.make_site(host="gone.example.net"), vantage=vantage)
    runner.run(m.pk)
    m = Measurement.objects.get(pk=m.pk)
    assert (m.status, m.failure_code) == ("failed", "dns")
    assert m.failure_reason == "'gone.example.net' cannot be resolved ([Errno -2] Name or service not known)"


def test_runner_hands_prober_the_vetted_numeric_address(db, quickprobe_bin, iperf3_port, vantage):
    site = factories.make_site(host="localhost", port=iperf3_port)
    m = factories.make_measurement(site=site, vantage=vantage, duration_s=2)
    assert runner.prober_command(m, hosts.vet_target("localhost")[0])[1:3] == ["-c", "127.0.0.1"]
    runner.run(m.pk)
    m = Measurement.objects.get(pk=m.pk)
    assert m.status == "done", m.failure_reason


def test_runner_next_vetted_address_tried_when_first_refuses(db, quickprobe_bin, iperf3_port, vantage, monkeypatch):
    """As the prober does with a name: nothing listens on ::1, so 127.0.0.1 is tried next."""
    monkeypatch.setattr(hosts, "getaddrinfo", fake_getaddrinfo({"dual.example.net": ["::1", "127.0.0.1"]}))
    site = factories.make_site(host="dual.example.net", port=iperf3_port)
    m = factories.make_measurement(site=site, vantage=vantage, duration_s=2)
    runner.run(m.pk)
    m = Measurement.objects.get(pk=m.pk)
    assert m.status == "done", m.failure_reason
