"""A real local HTTP server that records webhook POSTs (and can answer errors or stall)."""

import contextlib
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Hook:
    def __init__(self, fail_first=0, status=503, stall_s=0.0, location=None):
        self.received = []
        self.paths = []  # every request, "METHOD /path?query", POST or not
        self.headers = []
        self.location = location
        self.requests = 0
        self.fail_first = fail_first
        self.status = status
        self.stall_s = stall_s
        self.lock = threading.Lock()
        self.url = None

    def wait_for(self, count, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.05)
        raise AssertionError(
            f"webhook got {len(self.received)} of {count} POSTs within {timeout} s ({self.requests} requests in all)"
        )


@contextlib.contextmanager
def webhook_server(**kwargs):
    hook = Hook(**kwargs)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            with hook.lock:
                hook.paths.append(f"GET {self.path}")
            self.send_response(204)
            self.end_headers()

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with hook.lock:
                hook.requests += 1
                n = hook.requests
                hook.paths.append(f"POST {self.path}")
                hook.headers.append(dict(self.headers))
            if hook.stall_s:
                time.sleep(hook.stall_s)
            if n <= hook.fail_first:
                self.send_response(hook.status)
                if hook.location:
                    self.send_header("Location", hook.location)
                self.end_headers()
                return
            with hook.lock:
                hook.received.append({"content_type": self.headers.get("Content-Type"), "json": json.loads(body)})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class RawServer:
    """A real TCP server on 127.0.0.1 whose every connection gets `reply(conn, request_bytes)`:
    for receivers no HTTP library would be (a garbled status line, a reply dribbled a byte at
    a time). Records each request's first line."""

    def __init__(self, reply):
        self.reply = reply
        self.requests = []
        self.accepted = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.closing = False
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        while not self.closing:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        with conn:
            conn.settimeout(30)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                # Read the body too: closing with unread bytes makes the kernel send a reset, and
                # the client would see 'Connection reset by peer' or a clean close by a race
                # (a drill that closes without a reply expects the clean close).
                head, _, body = data.partition(b"\r\n\r\n")
                length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                while length and len(body) < int(length.group(1)):
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    body += chunk
                    data += chunk
                self.requests.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
                self.accepted.set()
                self.reply(conn, data)
            except OSError:
                pass  # the client gave up (its deadline): what the drill wants


@contextlib.contextmanager
def raw_server(reply):
    server = RawServer(reply)
    server.thread.start()
    try:
        yield server
    finally:
        server.closing = True
        server.sock.close()
        server.thread.join(5)


def dribble(text, every_s):
    """A reply that sends `text` one byte every `every_s` seconds."""

    def reply(conn, request):
        for byte in text.encode():
            conn.sendall(bytes([byte]))
            time.sleep(every_s)

    return reply
