"""nginx in front of gunicorn (issue 9 item 3): slow clients wait in nginx, not in gunicorn's
threads. The same ten slow clients sent straight to gunicorn starve /healthz, which shows the
test can fail."""

import contextlib
import socket
import threading
import time

import pytest

from tests.faults import proxy

pytestmark = pytest.mark.faults

SLOW_CLIENTS = 10
LINE_EVERY_S = 4.0
PROBE_TIMEOUT_S = 3.0
# gunicorn's first request imports and warms Django: seconds on a loaded box. It is not what
# these tests measure, so each one makes it first with this timeout, before any slow client.
WARM_UP_TIMEOUT_S = 60.0


def get(port, path="/healthz", timeout=PROBE_TIMEOUT_S, headers=""):
    """(status, seconds) of one GET over a fresh connection; status None on a timeout."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Connection: close\r\n\r\n".encode())
            reply = b""
            while b"\r\n" not in reply:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
    except TimeoutError:
        return None, time.monotonic() - started
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else None
    return status, time.monotonic() - started


@contextlib.contextmanager
def slow_clients(port, count=SLOW_CLIENTS, every_s=LINE_EVERY_S):
    """count connections that send a request line, then one header line every every_s seconds
    and never finish. Yields a dict with how each ended: 'open' or the server's first reply line."""
    stop = threading.Event()
    endings = {}

    def client(n):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                line = 0
                while not stop.is_set():
                    try:
                        reply = sock.recv(4096)
                        endings[n] = reply.split(b"\r\n", 1)[0].decode(errors="replace") or "closed"
                        return
                    except TimeoutError:
                        pass
                    if stop.wait(every_s - 1):
                        break
                    line += 1
                    sock.sendall(f"X-Slow-{line}: {'x' * 20}\r\n".encode())
                endings[n] = "open"
        except OSError as exc:
            endings[n] = f"error {exc}"

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(count)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(0.5)  # all connected and sending
        yield endings
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)


def probe_healthz(port, seconds):
    results = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        results.append(get(port))
        time.sleep(0.25)
    return results


def test_nginx_config_renders_and_passes_nginx_t(tmp_path):
    text = proxy.render_template("127.0.0.1:8080", "127.0.0.1:8000")
    assert "${" not in text
    # nginx's own variables are left for nginx, as the image's envsubst leaves them.
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in text
    with proxy.nginx(tmp_path / "nginx", upstream_port=9) as port:
        assert port


def test_slow_clients_starve_gunicorn_alone(tmp_path):
    with proxy.gunicorn(tmp_path, workers=1, threads=4) as (port, _log):
        assert get(port, timeout=WARM_UP_TIMEOUT_S)[0] == 200
        with slow_clients(port):
            probes = probe_healthz(port, 8)
        # The misses were the slow clients holding every thread, not a dead or merely loaded
        # gunicorn: once they are gone it answers again.
        assert get(port, timeout=WARM_UP_TIMEOUT_S)[0] == 200
    assert any(status is None for status, _ in probes), f"gunicorn alone was not starved: {probes}"


def test_slow_clients_do_not_starve_healthz_behind_nginx(tmp_path):
    with (
        proxy.gunicorn(tmp_path, workers=1, threads=4) as (upstream, log),
        proxy.nginx(tmp_path / "nginx", upstream) as port,
    ):
        assert get(port, timeout=WARM_UP_TIMEOUT_S)[0] == 200
        with slow_clients(port) as endings:
            probes = probe_healthz(port, 14)
            worst = max(seconds for _, seconds in probes)
        # Each probe has PROBE_TIMEOUT_S; gunicorn alone misses it (the test above).
        assert [status for status, _ in probes] == [200] * len(probes), f"slowest took {worst:.2f} s: {probes}"
        # nginx dropped them after client_header_timeout (10 s) without a word, and gunicorn
        # never saw them (its access log has only the probes).
        assert endings == {n: "closed" for n in range(SLOW_CLIENTS)}
    assert log.read_text().count("GET /healthz") == 1 + len(probes)  # the warm-up and the probes


def test_nginx_refuses_oversized_body_before_gunicorn(tmp_path):
    with (
        proxy.gunicorn(tmp_path, workers=1, threads=2) as (upstream, log),
        proxy.nginx(tmp_path / "nginx", upstream) as port,
    ):
        body = b"x" * (300 * 1024)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(
                b"POST /api/v1/measurements HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            )
            try:
                sock.sendall(body)
            except OSError:
                pass  # nginx may answer and close before the body is all sent
            reply = sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
        assert "/api/v1/measurements" not in log.read_text()
