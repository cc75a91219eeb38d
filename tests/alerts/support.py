"""A real local HTTP server that records webhook POSTs (and can answer errors or stall)."""

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Hook:
    def __init__(self, fail_first=0, status=503, stall_s=0.0):
        self.received = []
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
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with hook.lock:
                hook.requests += 1
                n = hook.requests
            if hook.stall_s:
                time.sleep(hook.stall_s)
            if n <= hook.fail_first:
                self.send_response(hook.status)
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
