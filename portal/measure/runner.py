"""Runs one measurement: claims the row, runs the prober, streams its JSON Lines (the contract
is prober/EVENTS.md) into progress and a trace, and stores the outcome.

The task in workers/tasks.py only calls run() and turns TryLater into a Celery retry.
"""
import ctypes
import json
import logging
import os
import random
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from . import progress
from .forms import format_window
from .models import Measurement, MeasurementTrace, Vantage
from .results import result_fields
from .trace import TraceBuilder

log = logging.getLogger(__name__)

# A sample line with 128 streams is ~60 KB; anything far beyond that is not the prober talking.
MAX_LINE_BYTES = 1024 * 1024
STDERR_TAIL_BYTES = 4096
PROGRESS_WRITE_INTERVAL_S = 0.25
PR_SET_PDEATHSIG = 1


class TryLater(Exception):
    """The measurement went back to `queued`; run it again after `countdown` seconds."""

    def __init__(self, countdown, reason, kwargs):
        super().__init__(reason)
        self.countdown = countdown
        self.reason = reason
        self.kwargs = kwargs


@dataclass
class Outcome:
    """What the prober run came to, before it is stored."""

    result: dict = None
    error_code: str = ""
    error_message: str = ""


def backoff(attempt):
    base = settings.RETRY_BASE_S * (2 ** min(attempt, 16))
    return min(settings.RETRY_MAX_S, base) * random.uniform(0.8, 1.2)


def prober_command(measurement):
    m = measurement
    cmd = [settings.QUICKPROBE_BIN, "-c", m.site.host, "-p", str(m.site.port), "-t", str(m.duration_s),
           "-P", str(m.streams), "--mode", m.mode, "--json"]
    if m.site.protocol == "iperf2":
        cmd.append("--iperf2")
    if m.window_bytes:
        cmd += ["-w", format_window(m.window_bytes)]
    if m.congestion:
        cmd += ["-C", m.congestion]
    return cmd


def _die_with_parent(parent_pid):
    def preexec():
        # The prober must not outlive a worker that is killed (SIGKILL gives it no chance to
        # clean up); PDEATHSIG fires when the thread that forked us exits.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def start_prober(cmd):
    return subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, preexec_fn=_die_with_parent(os.getpid()), close_fds=True,
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


class EventSink:
    """Turns prober events into progress, the trace and the final outcome."""

    def __init__(self, measurement_id):
        self.measurement_id = measurement_id
        self.trace = TraceBuilder()
        self.decimator = progress.Decimator()
        self.phase = "connecting"
        self.elapsed_s = 0.0
        self.start = None
        self.outcome = Outcome()
        self._last_write = 0.0
        self._dirty = True

    def handle_line(self, line):
        line = line.strip()
        if not line:
            return
        try:
            event = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            raise ValueError(f"the prober wrote a line that is not JSON: {line[:200]!r}") from None
        if not isinstance(event, dict):
            raise ValueError(f"the prober wrote JSON that is not an event object: {line[:200]!r}")
        self.handle(event)

    def handle(self, event):
        kind = event.get("event")
        if isinstance(event.get("t"), (int, float)):
            self.elapsed_s = float(event["t"])
        if kind == "start":
            self.start = event
        elif kind == "phase":
            self.phase = event.get("phase") or self.phase
            self._dirty = True
        elif kind == "sample":
            self.trace.add_sample(event)
            self.decimator.add(event)
            self._dirty = True
        elif kind == "slow_start_end":
            self.trace.slow_start_end_s = event.get("t")
        elif kind == "result":
            self.outcome.result = event
        elif kind == "error":
            self.outcome.error_code = str(event.get("code") or "error")
            self.outcome.error_message = str(event.get("message") or "")
        # Unknown events are a later, backward-compatible addition to the contract: ignored.
        self.flush_progress()

    def flush_progress(self, force=False):
        now = time.monotonic()
        if force or (self._dirty and now - self._last_write >= PROGRESS_WRITE_INTERVAL_S):
            progress.write(self.measurement_id, self.phase, self.elapsed_s, self.decimator.samples)
            self._last_write = now
            self._dirty = False


def claim(measurement_id):
    """Move the row from queued to running. True if we got it; False if someone else did or it
    is finished; IntegrityError if another measurement of the same site is running."""
    now = timezone.now()
    with transaction.atomic():
        claimed = Measurement.objects.filter(pk=measurement_id, status="queued").update(
            status="running", started_at=now, heartbeat_at=now, failure_code="", failure_reason="")
    return claimed == 1


def release(measurement_id):
    """Back to queued, for a retry."""
    Measurement.objects.filter(pk=measurement_id, status="running").update(
        status="queued", started_at=None, heartbeat_at=None)
    progress.write(measurement_id, "queued")


def fail(measurement_id, code, reason, from_statuses=("queued", "running")):
    updated = Measurement.objects.filter(pk=measurement_id, status__in=from_statuses).update(
        status="failed", failure_code=code[:32], failure_reason=reason, finished_at=timezone.now())
    progress.write(measurement_id, "failed")
    log.warning("measurement %s failed: %s: %s", measurement_id, code, reason)
    return updated == 1


def store_result(measurement_id, event, trace_dict):
    """Results and trace in one transaction; only while the row is still ours (running)."""
    with transaction.atomic():
        updated = Measurement.objects.filter(pk=measurement_id, status="running").update(
            status="done", finished_at=timezone.now(), heartbeat_at=timezone.now(), **result_fields(event))
        if updated != 1:
            return False
        measurement = Measurement.objects.only("pk").get(pk=measurement_id)
        MeasurementTrace.objects.filter(pk=measurement_id).delete()
        MeasurementTrace.from_dict(measurement, trace_dict).save()
    progress.write(measurement_id, "done")
    return True


def heartbeat(measurement_id):
    """False when the row is no longer ours (reaped or cancelled): stop the prober."""
    return Measurement.objects.filter(pk=measurement_id, status="running").update(heartbeat_at=timezone.now()) == 1


def _stderr_text(tail):
    text = tail.decode("utf-8", "replace").strip()
    return text[-1000:] if text else "(nothing on stderr)"


def run_prober(measurement, sink):
    """Runs the prober to its end, or kills it at the wall-clock limit. Fills sink.outcome;
    returns (failure_code, failure_reason) for failures that are not prober `error` events."""
    cmd = prober_command(measurement)
    limit_s = measurement.duration_s + settings.PROBER_MARGIN_S
    log.info("measurement %s: %s", measurement.slug, " ".join(cmd))
    try:
        proc = start_prober(cmd)
    except OSError as exc:
        return "prober_missing", f"cannot start the prober {cmd[0]}: {exc.strerror or exc}"
    started = time.monotonic()
    next_beat = started + settings.HEARTBEAT_INTERVAL_S
    reader = LineReader()
    stderr_tail = b""
    problem = None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    try:
        open_streams = 2
        while open_streams and problem is None:
            now = time.monotonic()
            if now - started > limit_s:
                problem = ("overran", f"prober overran: still running {limit_s:g} s after it started "
                                      f"(limit: duration {measurement.duration_s} s + margin "
                                      f"{settings.PROBER_MARGIN_S:g} s); it was killed.")
                break
            if now >= next_beat:
                next_beat = now + settings.HEARTBEAT_INTERVAL_S
                if not heartbeat(measurement.pk):
                    problem = ("abandoned", "the measurement was failed by the reaper or cancelled while it ran; "
                                            "the prober was stopped.")
                    break
            timeout = max(0.0, min(next_beat, started + limit_s) - now)
            for key, _ in selector.select(timeout):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                if key.data == "err":
                    stderr_tail = (stderr_tail + chunk)[-STDERR_TAIL_BYTES:]
                    continue
                try:
                    for line in reader.feed(chunk):
                        sink.handle_line(line)
                except ValueError as exc:
                    problem = ("prober_output", f"unreadable prober output: {exc}")
                    break
        if problem is None:
            if reader.buffer.strip():
                try:
                    sink.handle_line(reader.buffer)
                except ValueError as exc:
                    problem = ("prober_output", f"unreadable prober output: {exc}")
            try:
                returncode = proc.wait(timeout=max(1.0, started + limit_s - time.monotonic()))
            except subprocess.TimeoutExpired:
                problem = ("overran", f"prober overran: closed its output but did not exit within the limit "
                                      f"(duration {measurement.duration_s} s + margin {settings.PROBER_MARGIN_S:g} s); "
                                      "it was killed.")
        if problem is None:
            outcome = sink.outcome
            if outcome.result is not None and returncode == 0:
                return None
            if outcome.error_code:
                return None
            if returncode < 0:
                how = f"was killed by {signal.Signals(-returncode).name}"
            else:
                how = f"exited with status {returncode}"
            what = "after its result" if outcome.result is not None else "without a result or error event"
            return "prober_crashed", f"the prober {how} {what}; stderr: {_stderr_text(stderr_tail)}"
        return problem
    finally:
        selector.close()
        kill_group(proc)
        proc.stdout.close()
        proc.stderr.close()


def run(measurement_id, site_busy_attempts=0, server_busy_attempts=0):
    """The whole life of one measurement task. Raises TryLater to be retried."""
    try:
        if not claim(measurement_id):
            log.info("measurement %s is not queued any more; nothing to do", measurement_id)
            return None
    except IntegrityError:
        # Another measurement of this site is running (possibly from another vantage).
        if site_busy_attempts >= settings.SITE_BUSY_RETRIES:
            fail(measurement_id, "site_busy", f"the site stayed busy with other measurements through "
                                              f"{site_busy_attempts + 1} attempts; try again later.")
            return None
        raise TryLater(backoff(site_busy_attempts), "site busy",
                       {"site_busy_attempts": site_busy_attempts + 1, "server_busy_attempts": server_busy_attempts})

    try:
        return _run_claimed(measurement_id, site_busy_attempts, server_busy_attempts)
    except TryLater:
        raise
    except BaseException:
        # Whatever broke, the row must not wait for the reaper to learn it.
        fail(measurement_id, "internal", "the worker hit an internal error while running the measurement "
                                         "(see the worker's log).", from_statuses=("running",))
        raise


def _run_claimed(measurement_id, site_busy_attempts, server_busy_attempts):
    measurement = Measurement.objects.select_related("site", "vantage").get(pk=measurement_id)
    Vantage.objects.filter(pk=measurement.vantage_id).update(last_seen=timezone.now())
    sink = EventSink(measurement_id)
    sink.flush_progress(force=True)
    problem = run_prober(measurement, sink)
    outcome = sink.outcome
    if problem is not None:
        fail(measurement_id, *problem, from_statuses=("running",))
        return None
    if outcome.error_code == "server_busy":
        if server_busy_attempts < settings.SERVER_BUSY_RETRIES:
            release(measurement_id)
            raise TryLater(backoff(server_busy_attempts), "iperf server busy",
                           {"site_busy_attempts": site_busy_attempts, "server_busy_attempts": server_busy_attempts + 1})
        fail(measurement_id, "server_busy",
             f"the iperf server at {measurement.site.host}:{measurement.site.port} was busy with another client's test "
             f"on {server_busy_attempts + 1} attempts; last answer: {outcome.error_message}",
             from_statuses=("running",))
        return None
    if outcome.error_code:
        fail(measurement_id, outcome.error_code, outcome.error_message or outcome.error_code, from_statuses=("running",))
        return None
    sink.phase = "storing"
    sink.flush_progress(force=True)
    if not store_result(measurement_id, outcome.result, sink.trace.to_dict()):
        log.warning("measurement %s finished but was no longer running (reaped?); result not stored", measurement_id)
        return None
    return measurement_id
