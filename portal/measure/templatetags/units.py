"""Filters that print network figures the way engineers read them (bit/s in SI steps,
byte sizes in 1024 steps like iperf's -w, RTTs in ms)."""

from django import template

register = template.Library()

_RATE_UNITS = ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"))
_SIZE_UNITS = ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))


def _scaled(value, scale):
    # One decimal reads well from 10 upwards; below 10 a second decimal keeps 3 digits.
    v = value / scale
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def _stepped(value, units, base_unit):
    for scale, unit in units:
        if abs(value) >= scale:
            return f"{_scaled(value, scale)} {unit}"
    return f"{value:.0f} {base_unit}"


def format_bps(value):
    """123400000.0 -> "123.4 Mbit/s"; None -> "–" (unknown is not zero)."""
    if value is None or value == "":
        return "–"
    return _stepped(float(value), _RATE_UNITS, "bit/s")


def format_bytes(value):
    if value is None or value == "":
        return "–"
    return _stepped(int(value), _SIZE_UNITS, "B")


def format_us(value):
    """RTTs arrive in µs; below 1 ms (loopback) µs keep the digits that matter."""
    if value is None or value == "":
        return "–"
    value = float(value)
    if abs(value) < 1000:
        return f"{value:.0f} µs"
    return f"{_scaled(value, 1000)} ms"


def format_pct(value):
    if value is None or value == "":
        return "–"
    return f"{float(value):.1f} %"


def format_seconds(value):
    if value is None or value == "":
        return "–"
    return f"{float(value):.2f} s"


register.filter("bps", format_bps)
register.filter("bytes", format_bytes)
register.filter("us", format_us)
register.filter("pct", format_pct)
register.filter("secs", format_seconds)
