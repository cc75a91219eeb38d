"""The quick answer's interval the way issue 24 writes it: "612.0 Mbit/s (95 %: 590.0–640.0)",
both ends in the unit of the figure so the three numbers read together."""

from django import template

register = template.Library()

# As units.format_bps steps them (SI, bit/s).
_RATE_UNITS = ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"))


def _digits(v):
    # As units.format_bps: one decimal from 10 upwards, two below.
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


@register.filter
def interval_in_unit_of(interval, figure):
    """(lo, hi) bit/s -> "590.0–640.0", scaled as `figure` is by the bps filter; "" if unknown."""
    if not interval or figure is None:
        return ""
    scale = next((s for s, _ in _RATE_UNITS if abs(float(figure)) >= s), 1.0)
    lo, hi = interval
    return f"{_digits(lo / scale)}–{_digits(hi / scale)}"
