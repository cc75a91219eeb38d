"""A run as its page and `manage.py sweep run --wait` show it: each cell's state and reason,
the grid (one row per path, one column per setting) and the totals. Read from the cells and
their measurements on every call, so it is never stale."""

from dataclasses import dataclass, field

from portal.measure.models import QUICK_ANSWERS, Measurement
from portal.measure.paths import NO_SAVING, headline_expr, quick_saving
from portal.measure.units import format_window
from portal.measure.vocab import CellState, FailureCode, Mode, Status, public_failure_reason

from .models import SweepCell

# A measurement that failed for these reasons never measured the path: the cell is skipped.
SKIPPED_FAILURES = {
    FailureCode.SITE_BUSY: "site busy past the retries",
    FailureCode.SERVER_BUSY: "iperf server busy past the retries",
    FailureCode.VANTAGE_OFFLINE: "vantage offline",
    FailureCode.CANCELLED: "cancelled",
}
FINAL_STATES = (CellState.DONE, CellState.FAILED, CellState.SKIPPED)
_CELL_FIELDS = (
    "pk",
    "site__name",
    "site__slug",
    "vantage__name",
    "mode",
    "window_bytes",
    "streams",
    "congestion",
    "skip_code",
    "skip_reason",
    "measurement__slug",
    "measurement__status",
    "measurement__failure_code",
    "measurement__failure_reason",
    "measurement__quick_mode_entered",
    "measurement__quick_answered",
    "measurement__quick_converged",
    "measurement__duration_s",
    "measurement__bytes_sent",
    "measurement__elapsed_s",
)


@dataclass
class Cell:
    state: str
    reason: str
    slug: str
    bps: float
    row: dict
    # How the figure stands to quick mode (Measurement.quick_mark_of, the permalink's rule).
    mark: str = ""


@dataclass
class Totals:
    cells: int = 0
    counts: dict = field(default_factory=lambda: dict.fromkeys(CellState.values, 0))
    bytes_sent: int = 0
    # What quick mode saved in the run's finished quick tests, against runs of each test's own
    # -t (paths.quick_saving: the permalink's and the path page's definition).
    saved: object = NO_SAVING

    @property
    def finished(self):
        return sum(self.counts[s] for s in FINAL_STATES) == self.cells


def _public_reason(code):
    # The stored reason can hold the prober's stderr and the site's host:port: the public sees
    # the code's meaning (as on permalinks), staff the stored text.
    return public_failure_reason(code) or "the test failed (see the code)"


def cell_state(row, detail=False):
    """(state, reason) of one cell row (values of _CELL_FIELDS); detail: the stored failure
    reason (staff) instead of the code's public meaning."""
    if row["skip_code"]:
        return CellState.SKIPPED.value, row["skip_reason"]
    status = row["measurement__status"]
    if status is None:
        return CellState.FAILED.value, "its measurement was deleted"
    if status == Status.FAILED:
        code = row["measurement__failure_code"]
        if code in SKIPPED_FAILURES:
            return CellState.SKIPPED.value, SKIPPED_FAILURES[code]
        return CellState.FAILED.value, (row["measurement__failure_reason"] if detail else "") or _public_reason(code)
    return status, ""


def quick_mark(row):
    """Measurement.quick_mark of a cell row's measurement."""
    return Measurement.quick_mark_of(
        row["mode"],
        row["measurement__quick_mode_entered"],
        row["measurement__quick_answered"],
        row["measurement__quick_converged"],
    )


def _add(totals, state, row):
    totals.cells += 1
    totals.counts[state] += 1
    totals.bytes_sent += row["measurement__bytes_sent"] or 0
    # As Measurement.saving: every finished quick test counts, one that fell back saved nothing.
    if state != CellState.DONE or row["mode"] != Mode.QUICK or row["measurement__elapsed_s"] is None:
        return
    totals.saved += quick_saving(
        quick_mark(row) in QUICK_ANSWERS,
        row["measurement__duration_s"],
        row["measurement__elapsed_s"],
        row["measurement__bytes_sent"],
        row["headline_bps"],
    )


def setting_label(mode, window, streams, congestion):
    return f"{mode} -w {format_window(window) or 'default'} -P {streams}" + (f" -C {congestion}" if congestion else "")


def run_grid(run, detail=False):
    """(columns, rows, totals): columns are setting labels; rows are dicts with the path and
    its cells in column order (None where the path has no such cell). One query."""
    columns, rows, totals = {}, {}, Totals()
    cells = SweepCell.objects.filter(run=run).order_by("pk")
    # The headline rule of every other page (Measurement.headline_bps), in SQL.
    for row in cells.annotate(headline_bps=headline_expr("measurement__")).values(*_CELL_FIELDS, "headline_bps"):
        state, reason = cell_state(row, detail)
        _add(totals, state, row)
        label = setting_label(row["mode"], row["window_bytes"], row["streams"], row["congestion"])
        index = columns.setdefault(label, len(columns))
        path = rows.setdefault(
            (row["site__slug"], row["vantage__name"]),
            {"site": row["site__name"], "site_slug": row["site__slug"], "vantage": row["vantage__name"], "cells": {}},
        )
        mark = quick_mark(row) if state == CellState.DONE else ""
        path["cells"][index] = Cell(state, reason, row["measurement__slug"] or "", row["headline_bps"], row, mark)
    width = len(columns)
    ordered = [{**path, "cells": [path["cells"].get(i) for i in range(width)]} for path in rows.values()]
    return list(columns), ordered, totals


def run_totals(run):
    """Totals only (the command's --wait loop)."""
    totals = Totals()
    cells = SweepCell.objects.filter(run=run).annotate(headline_bps=headline_expr("measurement__"))
    for row in cells.values(*_CELL_FIELDS, "headline_bps"):
        _add(totals, cell_state(row)[0], row)
    return totals
