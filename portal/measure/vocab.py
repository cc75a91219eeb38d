"""The portal's vocabulary, in one place: what a measurement's status, mode, protocol, phase
and failure code can be, the states and choices of sweeps and alert deliveries, the Celery task
and queue names, and the result fields copied from the prober's `result` event
(prober/EVENTS.md). Every model's choices are a TextChoices here; code compares and filters
with the members, never with the literal (tests/portal/test_vocab.py scans for them).

Adding a failure code: add a member to FailureCode with a one-line meaning as its label, and
a row to the README's failure-code table (a test compares the two). Codes the prober itself
emits are also listed in PROBER_CODES. The model field stays a plain CharField without
choices, so a new code needs no migration and an unknown prober code is still stored.

Adding a result field: append a ResultField to RESULT_FIELDS and run makemigrations. The
model column, the runner's copy from the `result` event, the API's `results`, the CSV column
and the admin's read-only list all come from this declaration.
"""

from dataclasses import dataclass

from django.db import models


class Status(models.TextChoices):
    # Labels equal the values: they are what pages and the API have always shown.
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


FINISHED_STATUSES = (Status.DONE, Status.FAILED)
UNFINISHED_STATUSES = (Status.QUEUED, Status.RUNNING)


class Mode(models.TextChoices):
    QUICK = "quick", "quick"
    FULL = "full", "full"
    VALIDATE = "validate", "validate"


MODES = tuple(Mode.values)


class Protocol(models.TextChoices):
    IPERF3 = "iperf3", "iperf3"
    IPERF2 = "iperf2", "iperf 2"


class Phase(models.TextChoices):
    """Where a measurement is, as progress shows it. The prober's `phase` events give
    slow_start, measuring, full and finishing; the worker adds the others."""

    QUEUED = "queued", "Queued"
    CONNECTING = "connecting", "Connecting"
    SLOW_START = "slow_start", "Slow-start"
    MEASURING = "measuring", "Measuring"
    FULL = "full", "Full run"
    FINISHING = "finishing", "Finishing"
    STORING = "storing", "Storing"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class FailureCode(models.TextChoices):
    """Every value Measurement.failure_code can take; the label is its one-line meaning."""

    # Set by the portal.
    WORKER_LOST = "worker_lost", "the worker stopped heartbeating mid-test (killed, host down); the reaper failed it"
    QUEUED_TOO_LONG = "queued_too_long", "no worker took the test from its vantage's queue within REAPER_QUEUED_S"
    TASK_LOST = (
        "task_lost",
        "its task vanished from the broker (Redis restart, killed worker) more than WATCHDOG_MAX_RESENDS times",
    )
    SITE_BUSY = "site_busy", "other measurements of the site kept it busy through SITE_BUSY_RETRIES attempts"
    OVERRAN = "overran", "the prober ran past duration + PROBER_MARGIN_S and was killed"
    ABANDONED = "abandoned", "the row was failed (reaped or cancelled) while the prober ran; the prober was stopped"
    CANCELLED = "cancelled", "an administrator cancelled the test (admin action)"
    VANTAGE_OFFLINE = (
        "vantage_offline",
        "the vantage's worker stopped heartbeating; its queued tests were failed at once",
    )
    PROBER_MISSING = "prober_missing", "the worker could not start the prober binary (QUICKPROBE_BIN)"
    PROBER_OUTPUT = "prober_output", "the prober wrote something that is not a JSON Lines event (EVENTS.md)"
    PROBER_CRASHED = "prober_crashed", "the prober exited (or was killed) without a result or error event"
    INTERNAL = "internal", "the worker hit an unexpected error while running the test (see its log)"
    HOST_REFUSED = (
        "host_refused",
        "when the test started, the site resolved to an address sites may not use; nothing was sent",
    )
    # Emitted by the prober as its `error` event's code (prober/EVENTS.md) and stored as is.
    USAGE = "usage", "the prober refused an option or value"
    DNS = "dns", "the site's name does not resolve in time"
    CONNECT_REFUSED = "connect_refused", "nothing listens on the site's port"
    CONNECT_TIMEOUT = "connect_timeout", "no answer to connect within the connect timeout"
    SERVER_BUSY = "server_busy", "the iperf server was busy with another client through SERVER_BUSY_RETRIES attempts"
    SERVER_CLOSED = (
        "server_closed",
        "the server accepted and closed without a byte: not an iperf3 server, or it refuses us",
    )
    SERVER_ERROR = "server_error", "the iperf3 server reported an error (its code and errno are in the reason)"
    AUTH_REQUIRED = "auth_required", "the iperf3 server wants RSA authentication"
    PROTOCOL = "protocol", "the server sent garbage, oversized or unexpected messages"
    TIMEOUT = "timeout", "a read from the server missed its deadline"
    CONGESTION = "congestion", "the asked congestion control is not available on the vantage"
    INTERRUPTED = "interrupted", "the prober was interrupted before any data was sent"
    IO = "io", "any other socket error (errno text in the reason)"


class CellState(models.TextChoices):
    """What a sweep cell shows: its measurement's status, or skipped (no traffic was sent, or
    the test failed for a reason that is not the path's: sweeps/summary.py)."""

    QUEUED = Status.QUEUED.value, "queued"
    RUNNING = Status.RUNNING.value, "running"
    DONE = Status.DONE.value, "done"
    FAILED = Status.FAILED.value, "failed"
    SKIPPED = "skipped", "skipped"


class SkipCode(models.TextChoices):
    """Why a planned cell sent no traffic. Cells whose measurement failed for a reason that is
    not the path's (site busy, vantage offline) are shown as skipped too: see sweeps/summary.cell_state()."""

    BUDGET_SPENT = "budget_spent", "the site's daily traffic budget for this sweep is spent"
    SITE_DISABLED = "site_disabled", "the site is disabled"
    VANTAGE_OFFLINE = "vantage_offline", "the vantage's worker is not heartbeating"
    VANTAGE_DISABLED = "vantage_disabled", "the vantage is disabled"
    CONGESTION_UNAVAILABLE = "congestion_unavailable", "the vantage does not offer this congestion control"
    PENDING = "pending", "this path and setting is still queued or running from an earlier run"


class SweepRunStatus(models.TextChoices):
    SCHEDULED = "scheduled", "scheduled"
    PLANNED = "planned", "planned"


class SweepTrigger(models.TextChoices):
    BEAT = "beat", "schedule"
    ADMIN = "admin", "admin: run now"
    COMMAND = "command", "manage.py sweep run"


class DeliveryKind(models.TextChoices):
    OPENED = "opened", "alert"
    CLOSED = "closed", "recovery"


class DeliveryChannel(models.TextChoices):
    EMAIL = "email", "e-mail"
    WEBHOOK = "webhook", "webhook"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "pending"
    SENT = "sent", "sent"
    FAILED = "failed", "failed"


def public_failure_reason(code):
    """What anyone may read about a failure: its code's one-line meaning. The stored reason can
    hold the prober's stderr, the site's host:port and the cancelling admin's name."""
    if not code:
        return ""
    if code in FailureCode.values:
        return FailureCode(code).label
    return "the test failed (see the code)"


PROBER_CODES = frozenset(
    {
        FailureCode.USAGE,
        FailureCode.DNS,
        FailureCode.CONNECT_REFUSED,
        FailureCode.CONNECT_TIMEOUT,
        FailureCode.SERVER_BUSY,
        FailureCode.SERVER_CLOSED,
        FailureCode.SERVER_ERROR,
        FailureCode.AUTH_REQUIRED,
        FailureCode.PROTOCOL,
        FailureCode.TIMEOUT,
        FailureCode.CONGESTION,
        FailureCode.INTERRUPTED,
        FailureCode.IO,
    }
)

# Celery task names: the contract between whoever sends a task and the worker that runs it.
TASK_RUN = "measure.run"
TASK_REAP = "measure.reap"
TASK_REGISTER_VANTAGE = "measure.register_vantage"
# portal/sweeps: beat fires a sweep; a run with a random start offset starts later.
TASK_SWEEP_FIRE = "sweeps.fire"
TASK_SWEEP_START_RUN = "sweeps.start_run"
# portal/alerts: one delivery attempt of an alert notice.
TASK_DELIVER = "alerts.deliver"

# The queue every worker consumes (reaper, sweeps); measurements go to their vantage's queue.
SHARED_QUEUE = "celery"


def vantage_queue(name):
    return f"vantage.{name}"


@dataclass(frozen=True)
class ResultField:
    """One figure of the prober's `result` event stored in its own Measurement column.

    name: the column (units in the name, as in EVENTS.md); kind: float, bigint, int, bool or
    str; source: the keys leading to the value in the `result` event (default: (name,));
    csv: whether the measurements CSV has a column for it (at the end of the result columns,
    in declaration order); max_length: for str."""

    name: str
    kind: str
    source: tuple = ()
    csv: bool = True
    max_length: int = 32

    @property
    def path(self):
        return self.source or (self.name,)

    def model_field(self):
        if self.kind == "str":
            # "" rather than NULL for an unknown string, as Django wants for CharField.
            return models.CharField(max_length=self.max_length, blank=True)
        kinds = {
            "float": models.FloatField,
            "bigint": models.BigIntegerField,
            "int": models.IntegerField,
            "bool": models.BooleanField,
        }
        return kinds[self.kind](null=True, blank=True)

    def read(self, event):
        """The value in a `result` event; a missing or null value is None ("" for str)."""
        value = event
        for key in self.path:
            value = value.get(key) if isinstance(value, dict) else None
        if self.kind == "str":
            return value or ""
        return value


# The CSV's columns follow this order (its bytes are pinned by tests): append new fields.
RESULT_FIELDS = (
    ResultField("quick_mode_entered", "bool"),
    ResultField("quick_bps", "float"),
    ResultField("cumulative_bps", "float"),
    ResultField("full_bps", "float"),
    ResultField("slow_start_end_s", "float"),
    ResultField("rule", "str"),
    ResultField("elapsed_s", "float"),
    ResultField("bytes_sent", "bigint"),
    ResultField("server_bytes", "bigint"),
    ResultField("retransmits", "bigint"),
    ResultField("rtt_us", "bigint"),
    ResultField("min_rtt_us", "bigint"),
    ResultField("mss_bytes", "int"),
    ResultField("window_requested_bytes", "bigint", source=("window", "requested_bytes")),
    ResultField("window_given_bytes", "bigint", source=("window", "given_bytes")),
    ResultField("congestion_used", "str", source=("congestion",), max_length=16),
    ResultField("time_saved_pct", "float"),
    ResultField("traffic_saved_pct", "float"),
    ResultField("validate_quick_bps", "float", source=("validate", "quick_bps")),
    ResultField("validate_error_pct", "float", source=("validate", "error_pct")),
    ResultField("full_time_s", "float", csv=False),
    ResultField("full_bytes_estimate", "bigint", csv=False),
    # The quick estimate's error bar (issue 7): the +- half-width in % of quick_bps, the window it
    # took and whether it converged; null from provers before the converging window.
    ResultField("quick_ci_pct", "float"),
    ResultField("quick_window_s", "float"),
    ResultField("quick_converged", "bool"),
    ResultField("validate_quick_ci_pct", "float", source=("validate", "quick_ci_pct")),
    ResultField("validate_quick_converged", "bool", source=("validate", "quick_converged")),
    # Summarised from the trace's samples, not the result event (results.trace_summary): the
    # peer's receive window at the end, the share of the run it held the sender back, and
    # whether that share makes the result window-limited (the server's window set the rate).
    ResultField("peer_window_bytes", "bigint", source=("trace", "peer_window_bytes")),
    ResultField("rwnd_limited_pct", "float", source=("trace", "rwnd_limited_pct")),
    ResultField("window_limited", "bool", source=("trace", "window_limited")),
    # Why a quick window that did not converge stayed open (EVENTS.md, quick_held_by): "" when
    # it converged, and on rows from provers that did not say.
    ResultField("quick_held_by", "str", max_length=16),
    # Issue 24: quick mode answers by a deadline. quick_answered: quick_bps IS the result (it
    # converged, or answered at its deadline); false when it fell back to the full run
    # (--until-converged) or quick mode was not entered; null in full / validate and on older
    # rows (read as quick_converged). The 95 % interval is asymmetric, lo <= quick_bps <= hi
    # (older rows: quick_bps +- quick_ci_pct); bound_by / bound_text: which evidence set its
    # wider side, as a code and as one sentence (prober/EVENTS.md).
    ResultField("quick_answered", "bool"),
    ResultField("quick_lo_bps", "float"),
    ResultField("quick_hi_bps", "float"),
    ResultField("quick_bound_by", "str", max_length=16),
    ResultField("quick_bound_text", "str", max_length=300),
    # The validate object's quick_answered: whether the paired quick estimate was what quick mode
    # would have reported (it converged or answered at its deadline) or fell back; null on rows
    # from provers before issue 24. A column so the path page's error summary reads it without
    # loading result JSON.
    ResultField("validate_quick_answered", "bool", source=("validate", "quick_answered")),
)
RESULT_FIELD_NAMES = tuple(f.name for f in RESULT_FIELDS)

# quick_held_by's values (prober/EVENTS.md) in words, for the permalink; an unknown value from a
# newer prober is shown as it came.
QUICK_HOLDS = {
    "few_batches": "too few whole cycles for an interval",
    "short": "the rate kept changing level, and too little was left after the last change",
    "interval": "the 95 % interval stayed wider than the tolerance",
    "halves": "the window's two halves ran at different rates",
    "varying": "the rate changed level with the link full (cross traffic?)",
    "tail": "after the last cut the rate ran faster than whole cycles",
    "head": "the part dropped as a transient ran at another level with the link full",
    "last_slice": "the latest round left the window's level",
    "recovery": "a loss recovery was under way",
    "climbing": "cwnd was still climbing back to where slow-start left it",
    "sawtooth": "too few level sawtooth cycles, and no standing queue to keep the link full through a cut",
    "loss_free": "too few loss-free packets to rule out random loss",
    "probe_rtt": "BBR was in PROBE_RTT",
    "bw_rising": "BBR's bandwidth estimate was still rising",
    "random_loss": "random loss, seen or not yet ruled out, could lower the long-run rate",
    "growing": "cwnd was still growing with no standing queue of its own: the link, or its share of it, "
    "was not full yet",
    "lt_bw": "BBR held its long-term bandwidth (its policer mode), below its estimate from before",
    "receiver_window": "the server's receive window, not the path, held the rate, and the server may open it",
    "timeouts": "some stream was in a retransmission timeout most of the time (the streams share too "
    "little of the path), and the test's end may wait for one",
    "reorder_overflow": "the path reorders packets and no loss had cut cwnd yet: the first time the "
    "buffer overflows, Linux may cut cwnd again and again",
    "shared": "other traffic shared the bottleneck's queue: the rate was a share of the link, which may move",
}
