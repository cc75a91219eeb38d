"""Runs one measurement: claims the row, runs the prober, streams its JSON Lines (the contract
is prober/EVENTS.md) into progress and a trace, and stores the outcome.

The task in tasks.py only calls run() and turns TryLater into a Celery retry; the prober
process itself (start, read, stop) is workers/prober.py.
"""

import functools
import json
import logging
import random
import signal
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone
from psycopg.errors import DeadlockDetected

from workers import prober

from . import hosts, progress, vantages
from .models import Measurement, MeasurementTrace
from .results import TraceBuilder, result_fields, result_stored, trace_summary
from .units import format_window
from .vocab import UNFINISHED_STATUSES, FailureCode, Mode, Phase, Protocol, Status

log = logging.getLogger(__name__)

PROGRESS_WRITE_INTERVAL_S = 0.25


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


def prober_command(measurement, address=None):
    """The prober's command line; `address` is the numeric address vet_address() judged (the
    prober would otherwise resolve the site's name again and could reach another address)."""
    m = measurement
    cmd = [
        settings.QUICKPROBE_BIN,
        "-c",
        str(address) if address is not None else m.site.host,
        "-p",
        str(m.site.port),
        "-t",
        str(m.duration_s),
        "-P",
        str(m.streams),
        "--mode",
        m.mode,
        "--json",
    ]
    if m.site.protocol == Protocol.IPERF2:
        cmd.append("--iperf2")
    if m.window_bytes:
        cmd += ["-w", format_window(m.window_bytes)]
    if m.congestion:
        cmd += ["-C", m.congestion]
    if m.until_converged and m.mode == Mode.QUICK:
        # Without it quick mode answers by its deadline; with it a window that has not
        # converged goes on to -t and the full run is the result (prober/EVENTS.md). A full
        # or validate run goes to -t anyway: the option would say nothing there.
        cmd.append("--until-converged")
    return cmd


class EventSink:
    """Turns prober events into progress, the trace and the final outcome."""

    def __init__(self, measurement_id):
        self.measurement_id = measurement_id
        self.trace = TraceBuilder()
        self.decimator = progress.Decimator()
        self.phase = Phase.CONNECTING
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


def _reconnecting(write):
    """A dropped database connection (a PostgreSQL restart, pg_terminate_backend) must not
    lose a running test: the write is tried once more on a fresh connection."""

    @functools.wraps(write)
    def wrapper(*args, **kwargs):
        try:
            return write(*args, **kwargs)
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block:
                raise
            log.warning("database connection lost in %s (%s); reconnecting", write.__name__, exc)
            connection.close()
            return write(*args, **kwargs)

    return wrapper


@_reconnecting
def claim(measurement_id):
    """Move the row from queued to running. True if we got it; False if someone else did or it
    is finished; IntegrityError if another measurement of the same site is running;
    vantages.VantageBusy if its vantage runs as many tests as it may.

    The UPDATE may wait on the one-running-per-site index for the site's previous test to commit,
    so started_at is stamped only after it returned (a clock read before it, or a database Now()
    or clock_timestamp() in the same SET, would precede that test's finished_at)."""
    with transaction.atomic():
        vantages.hold_slot(measurement_id)
        claimed = Measurement.objects.filter(pk=measurement_id, status=Status.QUEUED).update(
            status=Status.RUNNING, failure_code="", failure_reason=""
        )
        if claimed != 1:
            return False
        now = timezone.now()
        Measurement.objects.filter(pk=measurement_id).update(started_at=now, heartbeat_at=now)
    return True


@_reconnecting
def release(measurement_id):
    """Back to queued, for a retry."""
    Measurement.objects.filter(pk=measurement_id, status=Status.RUNNING).update(
        status=Status.QUEUED, started_at=None, heartbeat_at=None
    )
    progress.write(measurement_id, Phase.QUEUED)


@_reconnecting
def fail(measurement_id, code, reason, from_statuses=UNFINISHED_STATUSES):
    updated = Measurement.objects.filter(pk=measurement_id, status__in=from_statuses).update(
        status=Status.FAILED, failure_code=code[:32], failure_reason=reason, finished_at=timezone.now()
    )
    progress.write(measurement_id, Phase.FAILED)
    log.warning("measurement %s failed: %s: %s", measurement_id, code, reason)
    return updated == 1


@_reconnecting
def store_result(measurement_id, event, trace_dict):
    """Results and trace in one transaction; only while the row is still ours (running)."""
    with transaction.atomic():
        updated = Measurement.objects.filter(pk=measurement_id, status=Status.RUNNING).update(
            status=Status.DONE,
            finished_at=timezone.now(),
            heartbeat_at=timezone.now(),
            **result_fields(event, trace_summary(trace_dict)),
        )
        if updated != 1:
            return False
        measurement = Measurement.objects.only("pk").get(pk=measurement_id)
        MeasurementTrace.objects.filter(pk=measurement_id).delete()
        MeasurementTrace.from_dict(measurement, trace_dict).save()
        # Listeners (alerts) run once the result is committed, outside this transaction.
        transaction.on_commit(lambda: result_stored.send(Measurement, measurement_id=measurement_id))
    progress.write(measurement_id, Phase.DONE)
    return True


@_reconnecting
def heartbeat(measurement_id):
    """False when the row is no longer ours (reaped or cancelled): stop the prober."""
    return Measurement.objects.filter(pk=measurement_id, status=Status.RUNNING).update(heartbeat_at=timezone.now()) == 1


# Codes after which the next address of the site is tried, as the prober itself does when it
# resolves a name: the connection to the address that failed was never made.
NEXT_ADDRESS_CODES = (FailureCode.CONNECT_REFUSED, FailureCode.CONNECT_TIMEOUT)


def vet_address(measurement):
    """([addresses], None) the test may connect to, or (None, (failure_code, reason)). The
    site's name is resolved once, here, and every address is judged by the same policy as the
    admin's site check (hosts.py), so a name that resolves elsewhere since the site was saved
    (loopback, metadata, a private network) is refused before any packet is sent. The stored
    reason does not name the address (the requester can read it and need not own the site's
    DNS); the worker's log does."""
    host = measurement.site.host
    try:
        return hosts.vet_target(host), None
    except hosts.Unresolvable as exc:
        return None, (FailureCode.DNS, str(exc))
    except hosts.Refused as exc:
        log.warning("measurement %s refused before connecting: %s", measurement.slug, exc)
        return None, (
            FailureCode.HOST_REFUSED,
            f"the site's host {host!r} resolved, when the test started, to an address the portal does not test "
            "(loopback, private, link-local, metadata or reserved; see ALLOW_PRIVATE_SITE_HOSTS); "
            "nothing was sent to it. The worker's log names the address.",
        )


def run_prober(measurement, sink, address=None):
    """Runs the prober to its end, or stops it at the wall-clock limit or when the row stops
    being ours. Fills sink.outcome; returns (failure_code, failure_reason) for failures that
    are not prober `error` events, else None."""
    cmd = prober_command(measurement, address)
    log.info("measurement %s: %s", measurement.slug, " ".join(cmd))
    try:
        proc = prober.start(cmd)
    except OSError as exc:
        return FailureCode.PROBER_MISSING, f"cannot start the prober {cmd[0]}: {exc.strerror or exc}"
    try:
        ending = prober.follow(
            proc,
            sink.handle_line,
            lambda: heartbeat(measurement.pk),
            settings.HEARTBEAT_TEST_S,
            measurement.duration_s + settings.PROBER_MARGIN_S,
        )
    finally:
        prober.kill_group(proc)
        proc.stdout.close()
        proc.stderr.close()
    return classify(measurement, ending, sink.outcome)


def classify(measurement, ending, outcome):
    """(failure_code, failure_reason) for how the prober's run ended, or None when its own
    events (a result with exit status 0, or an error event) tell the outcome."""
    limit_s = measurement.duration_s + settings.PROBER_MARGIN_S
    limit = f"duration {measurement.duration_s} s + margin {settings.PROBER_MARGIN_S:g} s"
    if ending.how == "overran":
        return FailureCode.OVERRAN, (
            f"prober overran: still running {limit_s:g} s after it started (limit: {limit}); it was killed."
        )
    if ending.how == "no_exit":
        return FailureCode.OVERRAN, (
            f"prober overran: closed its output but did not exit within the limit ({limit}); it was killed."
        )
    if ending.how == "stopped":
        return FailureCode.ABANDONED, (
            "the measurement was failed by the reaper or cancelled while it ran; the prober was stopped."
        )
    if ending.how == "bad_output":
        return FailureCode.PROBER_OUTPUT, f"unreadable prober output: {ending.detail}"
    if (outcome.result is not None and ending.returncode == 0) or outcome.error_code:
        return None
    return FailureCode.PROBER_CRASHED, crash_reason(ending, outcome)


def crash_reason(ending, outcome):
    if ending.returncode < 0:
        how = f"was killed by {signal.Signals(-ending.returncode).name}"
    else:
        how = f"exited with status {ending.returncode}"
    what = "after its result" if outcome.result is not None else "without a result or error event"
    return f"the prober {how} {what}; stderr: {ending.stderr_text()}"


def run(measurement_id, site_busy_attempts=0, server_busy_attempts=0):
    """The whole life of one measurement task. Raises TryLater to be retried."""
    try:
        if not claim(measurement_id):
            log.info("measurement %s is not queued any more; nothing to do", measurement_id)
            return None
    except OperationalError as exc:
        if not isinstance(exc.__cause__, DeadlockDetected):
            raise
        # A request queueing a test holds its user's and site's rows; this claim's site version
        # bump and foreign-key check take them the other way round, and PostgreSQL may pick the
        # claim as the victim (twice: _reconnecting tried again). Nothing changed: the test waits.
        raise TryLater(
            backoff(0),
            "deadlock with a request",
            {"site_busy_attempts": site_busy_attempts, "server_busy_attempts": server_busy_attempts},
        ) from None
    except vantages.VantageBusy as busy:
        # Never fails, and spends no site-busy attempt: a test waits for its vantage's turn.
        raise TryLater(
            backoff(0),
            str(busy),
            {"site_busy_attempts": site_busy_attempts, "server_busy_attempts": server_busy_attempts},
        ) from None
    except IntegrityError:
        # Another measurement of this site is running (possibly from another vantage).
        if site_busy_attempts >= settings.SITE_BUSY_RETRIES:
            fail(
                measurement_id,
                FailureCode.SITE_BUSY,
                f"the site stayed busy with other measurements through "
                f"{site_busy_attempts + 1} attempts; try again later.",
            )
            return None
        raise TryLater(
            backoff(site_busy_attempts),
            "site busy",
            {"site_busy_attempts": site_busy_attempts + 1, "server_busy_attempts": server_busy_attempts},
        )

    try:
        return _run_claimed(measurement_id, site_busy_attempts, server_busy_attempts)
    except TryLater:
        raise
    except BaseException:
        # Whatever broke, the row must not wait for the reaper to learn it.
        fail(
            measurement_id,
            FailureCode.INTERNAL,
            "the worker hit an internal error while running the measurement (see the worker's log).",
            from_statuses=(Status.RUNNING,),
        )
        raise


def _run_claimed(measurement_id, site_busy_attempts, server_busy_attempts):
    measurement = Measurement.objects.select_related("site", "vantage").get(pk=measurement_id)
    vantages.touch(measurement.vantage_id)
    sink = EventSink(measurement_id)
    sink.flush_progress(force=True)
    addresses, problem = vet_address(measurement)
    for i, address in enumerate(addresses or ()):
        sink.outcome = Outcome()
        problem = run_prober(measurement, sink, address)
        if problem or sink.outcome.error_code not in NEXT_ADDRESS_CODES or i == len(addresses) - 1:
            break
    outcome = sink.outcome
    if problem is not None:
        fail(measurement_id, *problem, from_statuses=(Status.RUNNING,))
        return None
    if outcome.error_code == FailureCode.SERVER_BUSY:
        if server_busy_attempts < settings.SERVER_BUSY_RETRIES:
            release(measurement_id)
            raise TryLater(
                backoff(server_busy_attempts),
                "iperf server busy",
                {"site_busy_attempts": site_busy_attempts, "server_busy_attempts": server_busy_attempts + 1},
            )
        fail(
            measurement_id,
            FailureCode.SERVER_BUSY,
            f"the iperf server at {measurement.site.host}:{measurement.site.port} was busy with another client's test "
            f"on {server_busy_attempts + 1} attempts; last answer: {outcome.error_message}",
            from_statuses=(Status.RUNNING,),
        )
        return None
    if outcome.error_code:
        fail(
            measurement_id,
            outcome.error_code,
            outcome.error_message or outcome.error_code,
            from_statuses=(Status.RUNNING,),
        )
        return None
    sink.phase = Phase.STORING
    sink.flush_progress(force=True)
    if not store_result(measurement_id, outcome.result, sink.trace.to_dict()):
        log.warning("measurement %s finished but was no longer running (reaped?); result not stored", measurement_id)
        return None
    return measurement_id
