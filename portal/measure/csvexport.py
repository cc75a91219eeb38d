"""CSV rows for lists of measurements (the site history export; reusable by the API).

Columns are the stored result figures in the units of prober/EVENTS.md (bit/s, bytes, µs,
seconds), so a notebook can read them without a unit table. Timestamps are ISO 8601 UTC.
"""
import csv

from django.http import StreamingHttpResponse

from .history import headline_expr
from .vocab import RESULT_FIELDS

MEASUREMENT_CSV_COLUMNS = [
    "slug", "site", "vantage", "mode", "status", "created_at", "started_at", "finished_at",
    "duration_s", "streams", "window_bytes", "congestion", "headline_bps",
    # The result columns, in the order of their one declaration.
    *(field.name for field in RESULT_FIELDS if field.csv),
    "failure_code", "failure_reason",
]

# What each column is read from: the row's own field, except these three.
_SOURCES = {"site": "site__slug", "vantage": "vantage__name", "headline_bps": "csv_headline_bps"}
_QUERY_NAMES = [_SOURCES.get(c, c) for c in MEASUREMENT_CSV_COLUMNS]


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def measurement_csv_rows(queryset, chunk_size=2000):
    """Header first, then one row per measurement. Reads only the columns it prints (never
    the result JSON or traces) and iterates in chunks, so 100,000 rows stream in flat memory."""
    yield MEASUREMENT_CSV_COLUMNS
    # The headline is the same SQL expression the history pages use (Measurement.headline_bps).
    rows = (queryset.annotate(csv_headline_bps=headline_expr())
            .values_list(*_QUERY_NAMES).iterator(chunk_size=chunk_size))
    for values in rows:
        yield [_cell(v) for v in values]


class _Echo:
    """csv.writer wants a file; this one hands each formatted line straight back."""

    def write(self, value):
        return value


def csv_response(rows, filename, lineterminator="\r\n"):
    """A streaming CSV download of rows (header first): one line is formatted at a time, so
    memory stays flat however many rows the iterator yields."""
    writer = csv.writer(_Echo(), lineterminator=lineterminator)
    response = StreamingHttpResponse((writer.writerow(row) for row in rows),
                                     content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
