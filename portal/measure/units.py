"""Sizes, rates and durations: the one place that parses and prints them.

Two kinds of text live here. Settings a person types and reads back (a window "256K", a budget
"10G", an interval "6h") round-trip exactly: parse_size / format_size, parse_duration /
format_duration. Figures a page shows ("123.4 Mbit/s", "1.50 MiB", "23.4 ms") are rounded for
reading and print "–" for unknown (unknown is not zero): format_bps, format_bytes, format_us,
format_pct, format_seconds, and a quick answer's interval in its figure's unit, format_interval.

Forms, the runner, the pages and sweeps import it, and it is the templates' `{% load units %}`
too (settings.TEMPLATES "libraries"): the filters at the end are these functions, so a page
and a CSV or an alert cannot print a figure differently. Importing it loads the portal package
and with it Celery and Django: that is why prober/lab/labctl.py, which runs as root outside the
venv, keeps its own size parser (a wider grammar for lab links, with decimals and G).
"""

import re

from django import template

# --- byte sizes a person types: iperf's grammar --------------------------------------------

# A whole number of bytes, optionally followed by a unit letter, 1024-based as iperf reads -w.
# The window field takes K and M; SIZE_PATTERN (its grammar) is also the request page's
# <input pattern> and the OpenAPI schema's, so the browser, the schema and this parser cannot
# disagree. Larger quantities (sweep budgets) pass units="KMGT".
SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
WINDOW_UNITS = "KM"
_NUMBER = "[0-9]+"


def _unit_class(units):
    return "[" + "".join(u + u.lower() for u in units) + "]?"


SIZE_PATTERN = rf"\s*{_NUMBER}\s*{_unit_class(WINDOW_UNITS)}\s*"


def parse_size(text, units=WINDOW_UNITS):
    """'64K' -> 65536 bytes. Raises ValueError when text is not a size in these units."""
    match = re.fullmatch(rf"\s*({_NUMBER})\s*({_unit_class(units)})\s*", str(text), re.ASCII)
    if not match:
        raise ValueError(f"{str(text)!r} is not a size")
    return int(match.group(1)) * SIZE_UNITS[match.group(2).upper()]


def format_size(value, units=WINDOW_UNITS):
    """65536 -> '64K': the largest of `units` that divides the value exactly, so that
    parse_size reads back the same number; None -> ''."""
    if value is None:
        return ""
    for unit in sorted(units, key=SIZE_UNITS.get, reverse=True):
        if value % SIZE_UNITS[unit] == 0:
            return f"{value // SIZE_UNITS[unit]}{unit}"
    return str(value)


def format_window(value):
    """A window as iperf's -w takes it (K or M): what the prober is given and labels show."""
    return format_size(value, WINDOW_UNITS)


# --- durations a person types: "30m", "6h" -------------------------------------------------

_DURATION_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION_RE = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$", re.IGNORECASE)


def parse_duration(text, what):
    """'90s', '15m', '6h', '1d' or plain seconds -> seconds (int). `what` names the field in the
    ValueError's message."""
    match = _DURATION_RE.match(str(text))
    if not match:
        raise ValueError(
            f"{what} {str(text).strip()!r} is not a duration: write a whole number with s, m, h or d, e.g. 30m or 6h"
        )
    return int(match.group(1)) * _DURATION_UNITS_S[(match.group(2) or "s").lower()]


def format_duration(seconds):
    """21600 -> '6h': the largest unit that divides exactly (parse_duration reads it back)."""
    if seconds is None:
        return ""
    for unit in ("d", "h", "m"):
        size = _DURATION_UNITS_S[unit]
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# --- figures a page shows: rounded for reading ---------------------------------------------

# Rates in SI steps (bit/s, as iperf prints them), byte counts in 1024 steps (as -w is read).
_RATE_STEPS = ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"))
_BYTE_STEPS = ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))
UNKNOWN = "–"


def _unknown(value):
    return value is None or value == ""


def _scaled(value, scale):
    # One decimal reads well from 10 upwards; below 10 a second decimal keeps 3 digits.
    v = value / scale
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def _step(value, steps):
    """The (scale, unit) of the largest step `value` reaches; None below the smallest."""
    return next(((scale, unit) for scale, unit in steps if abs(value) >= scale), None)


def _stepped(value, steps, base_unit):
    step = _step(value, steps)
    if step is None:
        return f"{value:.0f} {base_unit}"
    return f"{_scaled(value, step[0])} {step[1]}"


def format_bps(value):
    """123400000.0 -> "123.4 Mbit/s"; None -> "–" (unknown is not zero)."""
    if _unknown(value):
        return UNKNOWN
    return _stepped(float(value), _RATE_STEPS, "bit/s")


def format_bytes(value):
    if _unknown(value):
        return UNKNOWN
    return _stepped(int(value), _BYTE_STEPS, "B")


def format_us(value):
    """RTTs arrive in µs; below 1 ms (loopback) µs keep the digits that matter."""
    if _unknown(value):
        return UNKNOWN
    value = float(value)
    if abs(value) < 1000:
        return f"{value:.0f} µs"
    return f"{_scaled(value, 1000)} ms"


def format_pct(value):
    if _unknown(value):
        return UNKNOWN
    return f"{float(value):.1f} %"


def format_seconds(value):
    if _unknown(value):
        return UNKNOWN
    return f"{float(value):.2f} s"


def format_interval(interval, figure):
    """(590e6, 640e6) with a figure of 612e6 -> "590.0–640.0": both ends in the unit format_bps
    gives the figure, so "612.0 Mbit/s (95 %: 590.0–640.0)" reads as three numbers of one kind;
    "" when either is unknown."""
    if not interval or _unknown(figure):
        return ""
    scale, _ = _step(float(figure), _RATE_STEPS) or (1.0, "bit/s")
    lo, hi = interval
    return f"{_scaled(lo, scale)}–{_scaled(hi, scale)}"


# --- the templates' filters: {% load units %} -----------------------------------------------

register = template.Library()
register.filter("bps", format_bps)
register.filter("bytes", format_bytes)
register.filter("us", format_us)
register.filter("pct", format_pct)
register.filter("secs", format_seconds)
register.filter("interval_in_unit_of", format_interval)
