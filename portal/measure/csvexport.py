"""The measurement CSV exports (the site page's and the API's): one column list, one grammar
for their `since` / `until` filters, one writer.

Columns are the stored result figures in the units of prober/EVENTS.md (bit/s, bytes, µs,
seconds), so a notebook can read them without a unit table. Timestamps are ISO 8601 UTC.
"""

import csv
import dataclasses
import datetime
import re

from django.http import StreamingHttpResponse

from .models import QUICK_ANSWERS, Measurement
from .paths import headline_expr, quick_saving
from .vocab import RESULT_FIELDS, Mode, Status, public_failure_reason

MEASUREMENT_CSV_COLUMNS = [
    "slug",
    "site",
    "vantage",
    "mode",
    "status",
    "created_at",
    "started_at",
    "finished_at",
    "duration_s",
    "streams",
    "window_bytes",
    "congestion",
    "headline_bps",
    # How headline_bps stands to quick mode, as every page marks it (Measurement.quick_mark_of):
    # converged, deadline, estimate, fell_back, not_entered; blank for full, validate and
    # unfinished tests.
    "headline_mark",
    # The result columns, in the order of their one declaration.
    *(field.name for field in RESULT_FIELDS if field.csv),
    "failure_code",
    "failure_reason",
]

# What each column is read from: the row's own field, except these. The exports are public, so
# failure_reason is the code's public meaning, never the stored text (vocab.public_failure_reason).
_SOURCES = {
    "site": "site__slug",
    "vantage": "vantage__name",
    "headline_bps": "csv_headline_bps",
    "headline_mark": "mode",
    "failure_reason": "failure_code",
}
_QUERY_NAMES = [_SOURCES.get(c, c) for c in MEASUREMENT_CSV_COLUMNS]
_AT = {name: i for i, name in enumerate(MEASUREMENT_CSV_COLUMNS)}


def _saved_pcts(values):
    """(time_saved_pct, traffic_saved_pct) of one row by the pages' definition (issue 27:
    paths.quick_saving, against a run of the test's own -t), to the prober's 0.1 %; blank for
    full and validate tests. The stored prober figures differ only where it fell back (it
    counts the drain past -t as a loss) and on rows from older provers."""
    v = {name: values[i] for name, i in _AT.items()}
    if v["mode"] != Mode.QUICK or v["status"] != Status.DONE or v["elapsed_s"] is None:
        return None, None
    mark = Measurement.quick_mark_of(v["mode"], v["quick_mode_entered"], v["quick_answered"], v["quick_converged"])
    saved = quick_saving(mark in QUICK_ANSWERS, v["duration_s"], v["elapsed_s"], v["bytes_sent"], v["headline_bps"])
    return tuple(None if pct is None else round(pct, 1) for pct in (saved.time_pct, saved.traffic_pct))


def _headline_mark(values):
    """The row's quick mark (the pages' rule), blank unless it is a finished test's figure."""
    v = {name: values[i] for name, i in _AT.items()}
    if v["status"] != Status.DONE:
        return ""
    return Measurement.quick_mark_of(v["mode"], v["quick_mode_entered"], v["quick_answered"], v["quick_converged"])


# The filters' grammar, shared by both exports. A date (YYYY-MM-DD) means whole UTC days, both
# ends inclusive: since from its midnight, until up to the next midnight (exclusive). A
# datetime (ISO 8601, T or space, seconds optional, Z or ±HH:MM, naive = UTC) is inclusive at
# both ends. Years outside FIRST_DAY..LAST_DAY are refused: the day after 9999-12-31 does not
# exist in Python, and no measurement is older than 1970.
_DATE = r"(?P<date>\d{4}-\d{2}-\d{2})"
_DATETIME = re.compile(
    _DATE + r"(?:[T ](?P<time>\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2}| \d{2}:?\d{2})?)?",
    re.ASCII,
)
FIRST_DAY = datetime.date(1970, 1, 1)
LAST_DAY = datetime.date(2999, 12, 31)
PERIOD_PARAMS = ("since", "until")


class BadQuery(ValueError):
    """Query parameters that cannot be used: errors is {parameter: [message, ...]}."""

    def __init__(self, errors):
        super().__init__(errors)
        self.errors = errors

    def text(self):
        return "\n".join(message for messages in self.errors.values() for message in messages)


@dataclasses.dataclass(frozen=True)
class Period:
    since: datetime.datetime | None = None  # inclusive
    until: datetime.datetime | None = None  # inclusive, or exclusive when until_is_day
    until_is_day: bool = False

    def filter(self, queryset, field="created_at"):
        if self.since is not None:
            queryset = queryset.filter(**{f"{field}__gte": self.since})
        if self.until is not None:
            queryset = queryset.filter(**{f"{field}__{'lt' if self.until_is_day else 'lte'}": self.until})
        return queryset


def _shown(value, limit=40):
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _parse_moment(name, raw):
    """(aware UTC datetime, is_day) for one bound. Raises ValueError with the sentence to show."""
    value = raw.strip()
    match = _DATETIME.fullmatch(value)
    try:
        if match is None:
            raise ValueError
        day = datetime.date.fromisoformat(match["date"])
        if match["time"] is None:
            moment = datetime.datetime.combine(day, datetime.time.min)
        else:
            # A '+' in a query string that was not percent-encoded arrives as a space.
            zone = (match["zone"] or "").replace("Z", "+00:00").replace(" ", "+")
            moment = datetime.datetime.fromisoformat(f"{match['date']}T{match['time']}{zone}")
    except ValueError:
        raise ValueError(
            f"{name} {_shown(value)} is not a date: use YYYY-MM-DD or an ISO 8601 datetime such as "
            "2026-11-22T08:00:00Z."
        ) from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise ValueError(f"{name} {_shown(value)} is out of range: allowed {FIRST_DAY} to {LAST_DAY}.")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    is_day = match["time"] is None
    if is_day and name == "until":
        moment += datetime.timedelta(days=1)
    return moment, is_day


def parse_period(params):
    """The Period that `since` / `until` in params (a QueryDict or dict) select; blank or absent
    means unbounded. Raises BadQuery naming each bad parameter and what is allowed."""
    bounds, errors = {}, {}
    for name in PERIOD_PARAMS:
        raw = params.get(name) or ""
        if not raw.strip():
            continue
        try:
            bounds[name] = _parse_moment(name, raw)
        except ValueError as exc:
            errors[name] = [str(exc)]
    since, _ = bounds.get("since", (None, False))
    until, until_is_day = bounds.get("until", (None, False))
    if since is not None and until is not None and (since >= until if until_is_day else since > until):
        errors["until"] = ["until must be later than since."]
    if errors:
        raise BadQuery(errors)
    return Period(since, until, until_is_day)


def measurement_csv_response(queryset, period, filename):
    """The measurement export: queryset's rows within period, oldest first, streamed."""
    rows = measurement_csv_rows(period.filter(queryset).order_by("created_at", "pk"))
    return csv_response(rows, filename)


def _cell(value):
    """A value as the CSV shows it (escaping happens in csv_response, for every CSV)."""
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
    rows = (
        queryset.annotate(csv_headline_bps=headline_expr()).values_list(*_QUERY_NAMES).iterator(chunk_size=chunk_size)
    )
    for values in rows:
        values = list(values)
        values[_AT["time_saved_pct"]], values[_AT["traffic_saved_pct"]] = _saved_pcts(values)
        values[_AT["headline_mark"]] = _headline_mark(values)
        yield [_cell(v) for v in values[:-1]] + [public_failure_reason(values[-1])]


# A spreadsheet runs a text cell that starts with one of these as a formula (CSV injection:
# a site slug or a failure text could read "=HYPERLINK(...)"). OWASP's advice: prefix the cell
# with a single quote, which spreadsheets show as text and csv readers keep as a character.
# Numbers are written as numbers: a negative figure is data, not a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def escape_formula(value):
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class _Echo:
    """csv.writer wants a file; this one hands each formatted line straight back."""

    def write(self, value):
        return value


def csv_response(rows, filename, lineterminator="\r\n"):
    """A streaming CSV download of rows (header first): one line is formatted at a time, so
    memory stays flat however many rows the iterator yields."""
    writer = csv.writer(_Echo(), lineterminator=lineterminator)
    lines = (writer.writerow([escape_formula(cell) for cell in row]) for row in rows)
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
