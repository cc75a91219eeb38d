"""Hostile iperf3 servers on real sockets (the one thing a stock iperf3 cannot play).

A FakeIperf3 listens on 127.0.0.1:<free port>; the first connection of a session is the
control connection, later ones are data streams. `script` names how it misbehaves; the
well-behaved "ok" script is the control case showing that the fake speaks iperf3 well
enough for the prober to finish, so the other scripts fail only where they mean to."""

import json
import queue
import socket
import struct
import threading
import time

COOKIE_LEN = 37
PARAM_EXCHANGE, CREATE_STREAMS, TEST_START, TEST_RUNNING = 9, 10, 1, 2
TEST_END, EXCHANGE_RESULTS, DISPLAY_RESULTS, IPERF_DONE = 4, 13, 14, 16
SERVER_ERROR = 0xFE

SCRIPTS = {
    "ok",
    "garbage",
    "wrong_state",
    "server_error",
    "auth_312",
    "silent",
    "oversized_results",
    "bad_json_results",
    "stall_results",
    "eof_before_params",
    "garbage_fe",
    "close_at_once",
    "close_unread",
    "busy_reset",
    "stop_reading",
}
# Scripts that answer every connection the same way, at accept time (no control/data split).
AT_ACCEPT = {"close_at_once", "close_unread", "busy_reset"}


class Closed(Exception):
    pass


class FakeIperf3:
    def __init__(self, script, iperf_error=0, errno=0, results_size=None):
        assert script in SCRIPTS, script
        self.script = script
        self.results_size = results_size  # pad the "ok" results JSON to exactly this
        self.iperf_error = iperf_error
        self.errno = errno
        self.stop_event = threading.Event()
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.lsock.settimeout(0.1)
        self.port = self.lsock.getsockname()[1]
        self.socks = []
        self.data_conns = queue.Queue()
        self.received = {}  # stream id -> payload bytes received
        self.client_params = None
        self.client_results = None
        self.errors = []
        self.accepted = 0  # connections accepted, control and data
        self.threads = []
        self._spawn(self._accept_loop)

    # -- plumbing ---------------------------------------------------------------------
    def _spawn(self, fn, *args):
        t = threading.Thread(target=self._guard, args=(fn, *args), daemon=True)
        self.threads.append(t)
        t.start()

    def _guard(self, fn, *args):
        try:
            fn(*args)
        except (Closed, OSError):
            pass
        except Exception as e:  # surfaced by the tests through .errors
            self.errors.append(repr(e))

    def _accept_loop(self):
        control_taken = False
        while not self.stop_event.is_set():
            try:
                conn, _ = self.lsock.accept()
            except socket.timeout:
                continue
            conn.settimeout(0.1)
            self.socks.append(conn)
            self.accepted += 1
            if self.script in AT_ACCEPT:
                self._at_accept(conn)
            elif not control_taken:
                control_taken = True
                self._spawn(self._control, conn)
            else:
                self.data_conns.put(conn)

    def recv_exact(self, conn, n):
        buf = b""
        while len(buf) < n:
            if self.stop_event.is_set():
                raise Closed()
            try:
                chunk = conn.recv(n - len(buf))
            except socket.timeout:
                continue
            if not chunk:
                raise Closed()
            buf += chunk
        return buf

    def wait_closed(self, conn):
        """Hold the connection open, saying nothing, until the client or the test closes."""
        while not self.stop_event.is_set():
            try:
                if not conn.recv(65536):
                    return
            except socket.timeout:
                continue

    def read_json(self, conn):
        (n,) = struct.unpack(">I", self.recv_exact(conn, 4))
        return json.loads(self.recv_exact(conn, n))

    @staticmethod
    def send_json(conn, obj):
        raw = json.dumps(obj).encode()
        conn.sendall(struct.pack(">I", len(raw)) + raw)

    # -- the server ------------------------------------------------------------------
    def _at_accept(self, c):
        """close_at_once: close without a word, racing the client's cookie (FIN or reset).
        close_unread: close once the cookie has arrived, unread: always a reset, nothing sent.
        busy_reset: what a busy iperf3 does (ACCESS_DENIED, then close without reading the
        cookie), made to always end in a reset: the 0xFF must still be read as busy."""
        if self.script == "busy_reset":
            c.sendall(bytes([0xFF]))
        if self.script in ("close_unread", "busy_reset"):
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                try:
                    if c.recv(1, socket.MSG_PEEK):
                        break
                except socket.timeout:
                    continue
        c.close()

    def _control(self, c):
        self.recv_exact(c, COOKIE_LEN)
        s = self.script
        if s == "silent":
            return self.wait_closed(c)
        if s == "garbage":
            c.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
            return self.wait_closed(c)
        if s == "eof_before_params":
            c.close()
            return
        if s == "garbage_fe":
            # A first byte that happens to be SERVER_ERROR (0xFE), then bytes that are no
            # iperf3 error code: issue 9 saw this reported as "iperf3 error -840617896".
            c.sendall(bytes([SERVER_ERROR]) + bytes.fromhex("cde5305800000000") + b"junk")
            return self.wait_closed(c)
        c.sendall(bytes([PARAM_EXCHANGE]))
        self.client_params = self.read_json(c)
        if s == "wrong_state":
            c.sendall(bytes([7]))  # 7 is not a state iperf3 ever sends
            return self.wait_closed(c)
        if s == "server_error":
            c.sendall(bytes([SERVER_ERROR]) + struct.pack(">ii", self.iperf_error, self.errno))
            return self.wait_closed(c)
        if s == "auth_312":
            # What a real 3.12 server with --rsa-private-key-path sends a client without a
            # token: SERVER_ERROR, error 142 (IEAUTHTEST), no errno, then it closes.
            c.sendall(bytes([SERVER_ERROR]) + struct.pack(">i", 142))
            c.close()
            return
        self._run_test(c)

    def _run_test(self, c):
        n = int(self.client_params.get("parallel", 1))
        c.sendall(bytes([CREATE_STREAMS]))
        ids = [1] + list(range(3, n + 2))
        for sid in ids:
            try:
                d = self.data_conns.get(timeout=5)
            except queue.Empty:
                raise RuntimeError("client opened fewer data streams than 'parallel'")
            self.recv_exact(d, COOKIE_LEN)
            self.received[sid] = 0
            self._spawn(self._drain, d, sid)
        c.sendall(bytes([TEST_START, TEST_RUNNING]))
        state = self.recv_exact(c, 1)[0]
        if state != TEST_END:
            raise RuntimeError(f"client sent state {state}, want TEST_END")
        c.sendall(bytes([EXCHANGE_RESULTS]))
        self.client_results = self.read_json(c)
        s = self.script
        if s == "stall_results":
            return self.wait_closed(c)
        if s == "oversized_results":
            c.sendall(struct.pack(">I", 1 << 20) + b"{" * 4096)
            return self.wait_closed(c)
        if s == "bad_json_results":
            raw = b'{"cpu_util_total": 1, "streams": [ this is not json'
            c.sendall(struct.pack(">I", len(raw)) + raw)
            return self.wait_closed(c)
        time.sleep(0.05)  # let the drains count the last bytes
        raw = json.dumps(self.server_results(ids)).encode()
        if self.results_size is not None:
            assert len(raw) <= self.results_size
            raw += b" " * (self.results_size - len(raw))  # trailing blanks: still valid JSON
        c.sendall(struct.pack(">I", len(raw)) + raw)
        c.sendall(bytes([DISPLAY_RESULTS]))
        self.recv_exact(c, 1)  # IPERF_DONE
        self.wait_closed(c)

    def server_results(self, ids):
        return {
            "cpu_util_total": 1.0,
            "cpu_util_user": 0.5,
            "cpu_util_system": 0.5,
            "sender_has_retransmits": 0,
            "congestion_used": "cubic",
            "streams": [
                {
                    "id": sid,
                    "bytes": self.received[sid],
                    "retransmits": -1,
                    "jitter": 0,
                    "errors": 0,
                    "packets": 0,
                    "start_time": 0,
                    "end_time": 1.0,
                }
                for sid in ids
            ],
        }

    def _drain(self, d, sid):
        if self.script == "stop_reading":
            # a server that stops reading its data streams from the start: once the receive
            # buffer is full the window is zero, and nothing more is delivered
            self.stop_event.wait()
            return
        while True:
            try:
                chunk = d.recv(1 << 20)
            except socket.timeout:
                if self.stop_event.is_set():
                    return
                continue
            if not chunk:
                return
            self.received[sid] += len(chunk)

    def close(self):
        self.stop_event.set()
        for s in [self.lsock, *self.socks]:
            try:
                s.close()
            except OSError:
                pass
        for t in self.threads:
            t.join(timeout=2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
