"""The text forms of a sweep's settings, read the same way by the admin form and `manage.py
sweep create`: lists ("64K,256K,1M"), intervals ("6h"), crontab lines ("0 */6 * * *") and byte
sizes ("10G"). Each parser raises ValueError with a message naming what is allowed."""

from celery.schedules import ParseException, crontab

from portal.measure.forms import parse_window
from portal.measure.units import format_size, format_window, parse_duration, parse_size
from portal.measure.vocab import MODES

STREAMS_RANGE = (1, 64)  # IEPM-BW swept 20-40 streams; the prober allows 128
EVERY_RANGE_S = (1, 366 * 86400)
SLIP_MAX_S = 3600  # a delayed start waits in the broker; Redis redelivers after an hour
DEFAULT_WINDOW_WORDS = {"default", "kernel", "-"}

# Budgets run to gigabytes a day: the portal's size grammar with G and T too.
BUDGET_UNITS = "KMGT"


def split_list(text):
    """'a, b,,c' -> ['a', 'b', 'c']; a list passes through."""
    if isinstance(text, (list, tuple)):
        return [str(item).strip() for item in text if str(item).strip()]
    return [item.strip() for item in str(text or "").split(",") if item.strip()]


def _unique(values):
    seen = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def parse_windows(text):
    """'default,64K,1M' -> [None, 65536, 1048576]; blank means the kernel's default only."""
    words = split_list(text)
    if not words:
        return [None]
    values = []
    for word in words:
        if word.lower() in DEFAULT_WINDOW_WORDS:
            values.append(None)
            continue
        values.append(parse_window(word))  # ValueError names the allowed range
    return _unique(values)


def format_windows(values):
    return ",".join(format_window(v) if v is not None else "default" for v in values)


def parse_streams(text):
    words = split_list(text)
    if not words:
        raise ValueError(f"give at least one streams count, e.g. 1,4,16 (each {STREAMS_RANGE[0]}-{STREAMS_RANGE[1]})")
    values = []
    low, high = STREAMS_RANGE
    for word in words:
        if not word.isdigit():
            raise ValueError(f"streams {word!r} is not a whole number: allowed {low} to {high}, e.g. 1,4,16")
        value = int(word)
        if not low <= value <= high:
            raise ValueError(f"streams {value} is out of range: allowed {low} to {high}")
        values.append(value)
    return _unique(values)


def parse_modes(text):
    words = [w.lower() for w in split_list(text)]
    if not words:
        raise ValueError("give at least one mode: quick, full or validate")
    for word in words:
        if word not in MODES:
            raise ValueError(f"mode {word!r} is not allowed: choose from quick, full, validate")
    return _unique(words)


def parse_congestion(text, known):
    """'cubic,bbr' -> ['cubic', 'bbr']; blank -> [''] (each vantage's default). `known` is the
    set the vantages report; naming another would only plan failed tests."""
    words = split_list(text)
    if not words:
        return [""]
    values = []
    for word in words:
        if word.lower() in DEFAULT_WINDOW_WORDS:
            values.append("")
            continue
        if word not in known:
            allowed = ", ".join(sorted(known)) or "(no vantage reports any)"
            raise ValueError(
                f"congestion control {word!r} is not offered by any vantage: choose from {allowed}, "
                "or 'default' for each vantage's own"
            )
        values.append(word)
    return _unique(values)


def parse_every(text):
    """'90s', '15m', '6h', '1d' or plain seconds -> seconds (int); blank -> None."""
    if text is None or not str(text).strip():
        return None
    seconds = parse_duration(text, "interval")
    low, high = EVERY_RANGE_S
    if not low <= seconds <= high:
        raise ValueError(f"interval {str(text).strip()} is out of range: allowed 1s to 366d")
    return seconds


def parse_slip(text):
    """The random start offset: like an interval, 0 to 1h; blank -> 0."""
    if text is None or not str(text).strip():
        return 0
    seconds = parse_duration(text, "random start offset")
    if seconds > SLIP_MAX_S:
        raise ValueError(f"random start offset {str(text).strip()} is too long: allowed 0 to 1h")
    return seconds


def parse_cron(text):
    """A five-field crontab line (minute hour day-of-month month day-of-week, UTC) -> the five
    fields as a tuple; blank -> None."""
    if text is None or not str(text).strip():
        return None
    fields = str(text).split()
    if len(fields) != 5:
        raise ValueError(
            f"crontab {str(text).strip()!r} has {len(fields)} fields: write five, "
            "minute hour day-of-month month day-of-week (UTC), e.g. '0 */6 * * *'"
        )
    minute, hour, day_of_month, month_of_year, day_of_week = fields
    try:
        crontab(
            minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month_of_year, day_of_week=day_of_week
        )
    except (ValueError, ParseException) as exc:
        raise ValueError(f"crontab {str(text).strip()!r} is not valid: {exc}") from None
    return tuple(fields)


def parse_budget(text):
    """'10G' -> bytes (K/M/G/T 1024-based, as iperf reads sizes); blank -> None (no limit)."""
    if text is None or not str(text).strip():
        return None
    word = str(text).strip()
    try:
        value = parse_size(word, units=BUDGET_UNITS)
    except ValueError:
        raise ValueError(
            f"size {word!r} is not a size: write a whole number of bytes, optionally followed by K, M, "
            "G or T (1024-based), e.g. 10G; blank for no limit"
        ) from None
    if value < 1:
        raise ValueError("size must be at least 1 byte; leave it blank for no limit")
    return value


def format_budget(value):
    return format_size(value, BUDGET_UNITS)
