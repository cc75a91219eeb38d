"""The template filters for network figures; the formatting itself is measure/units.py."""

from django import template

from portal.measure.units import format_bps, format_bytes, format_pct, format_seconds, format_us

register = template.Library()

register.filter("bps", format_bps)
register.filter("bytes", format_bytes)
register.filter("us", format_us)
register.filter("pct", format_pct)
register.filter("secs", format_seconds)
