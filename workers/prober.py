"""The prober as a child process of a worker on a prober host: start it so it dies with the
worker, read its JSON Lines and stderr until it ends, a deadline passes or the caller says
stop, and stop it. Plain Python, no Django: what the output means is the portal's business
(portal/measure/runner.py), the contract is prober/EVENTS.md.
"""

import ctypes
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass

# A sample line with 128 streams is ~60 KB; anything far beyond that is not the prober talking.
MAX_LINE_BYTES = 1024 * 1024
STDERR_TAIL_BYTES = 4096
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid):
    def preexec():
        # The prober must not outlive a worker that is killed (SIGKILL gives it no chance to
        # clean up); PDEATHSIG fires when the thread that forked us exits.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def start(cmd):
    """Starts the prober in a process group of its own. Raises OSError if it cannot."""
    return subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_die_with_parent(os.getpid()),
        close_fds=True,
    )


def kill_group(proc, grace_s=2.0):
    """SIGTERM the prober's process group (it then ends the test cleanly), SIGKILL after grace_s."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


class LineReader:
    """Splits a byte stream into lines, refusing any line longer than MAX_LINE_BYTES."""

    def __init__(self, limit=MAX_LINE_BYTES):
        self.limit = limit
        self.buffer = b""

    def feed(self, chunk):
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        if len(self.buffer) > self.limit or any(len(line) > self.limit for line in lines):
            raise ValueError(f"the prober wrote a line longer than {self.limit} bytes")
        return lines


@dataclass
class Ending:
    """How reading the prober's output ended. how: "eof" (both outputs closed, returncode set
    unless it then failed to exit in time: "no_exit"), "overran" (the deadline passed),
    "stopped" (on_tick said stop) or "bad_output" (on_line raised ValueError: detail)."""

    how: str
    returncode: int = None
    stderr_tail: bytes = b""
    detail: str = ""

    def stderr_text(self):
        text = self.stderr_tail.decode("utf-8", "replace").strip()
        return text[-1000:] if text else "(nothing on stderr)"


def follow(proc, on_line, on_tick, tick_s, limit_s):
    """Reads the prober's stdout lines into on_line(bytes) and keeps the tail of its stderr,
    calling on_tick() every tick_s seconds (it returns False to stop), until both outputs
    close, on_tick stops it, on_line raises ValueError, or limit_s seconds have passed. The
    caller stops the process afterwards (kill_group)."""
    started = time.monotonic()
    deadline = started + limit_s
    next_tick = started + tick_s
    reader = LineReader()
    ending = Ending("eof")
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    try:
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                ending.how = "overran"
                return ending
            if now >= next_tick:
                next_tick = now + tick_s
                if not on_tick():
                    ending.how = "stopped"
                    return ending
            for key, _ in selector.select(max(0.0, min(next_tick, deadline) - now)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.data == "err":
                    ending.stderr_tail = (ending.stderr_tail + chunk)[-STDERR_TAIL_BYTES:]
                elif not _feed(reader, chunk, on_line, ending):
                    return ending
        if reader.buffer.strip() and not _feed(reader, b"\n", on_line, ending):
            return ending
        try:
            ending.returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            ending.how = "no_exit"
        return ending
    finally:
        selector.close()


def _feed(reader, chunk, on_line, ending):
    """False (and ending says why) when the output is unreadable."""
    try:
        for line in reader.feed(chunk):
            on_line(line)
    except ValueError as exc:
        ending.how, ending.detail = "bad_output", str(exc)
        return False
    return True
