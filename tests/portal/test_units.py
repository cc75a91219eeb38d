"""portal/measure/units.py: the one parser and printer of sizes, durations and shown figures."""

import pytest

from portal.measure import units


@pytest.mark.parametrize(
    "value,unit_letters,text",
    [
        (None, "KM", ""),
        (65536, "KM", "64K"),
        (1048576, "KM", "1M"),
        (1024**3, "KM", "1024M"),
        (1024**3, "KMGT", "1G"),
        (10 * 1024**4, "KMGT", "10T"),
        (4097, "KMGT", "4097"),
    ],
)
def test_format_size_largest_exact_unit(value, unit_letters, text):
    assert units.format_size(value, unit_letters) == text
    if value is not None:
        assert units.parse_size(text, unit_letters) == value  # reads back what it printed


def test_format_window_is_the_k_and_m_form():
    assert units.format_window(3 * 1024**3) == "3072M"
    assert units.format_window(None) == ""


def test_parse_size_refuses_units_not_allowed():
    with pytest.raises(ValueError, match="'10G' is not a size"):
        units.parse_size("10G")
    assert units.parse_size(" 10 g ", "KMGT") == 10 * 1024**3


@pytest.mark.parametrize(
    "text,seconds", [("90", 90), ("90s", 90), ("15m", 900), (" 6H ", 21600), ("1d", 86400), ("0", 0)]
)
def test_parse_duration_units(text, seconds):
    assert units.parse_duration(text, "interval") == seconds


@pytest.mark.parametrize("text", ["", "1.5h", "6 hours", "-1m", "h"])
def test_parse_duration_names_the_field_and_the_grammar(text):
    with pytest.raises(ValueError) as exc:
        units.parse_duration(text, "random start offset")
    assert str(exc.value) == (
        f"random start offset {text.strip()!r} is not a duration: write a whole number with s, m, h or d, "
        "e.g. 30m or 6h"
    )


@pytest.mark.parametrize("seconds,text", [(None, ""), (0, "0d"), (86400, "1d"), (7200, "2h"), (90, "90s"), (120, "2m")])
def test_format_duration_largest_exact_unit(seconds, text):
    assert units.format_duration(seconds) == text


@pytest.mark.parametrize(
    "func,value,text",
    [
        (units.format_bps, 123_400_000.0, "123.4 Mbit/s"),
        (units.format_bps, 9_870_000_000, "9.87 Gbit/s"),
        (units.format_bps, 999, "999 bit/s"),
        (units.format_bps, None, "–"),
        (units.format_bytes, 1536, "1.50 KiB"),
        (units.format_bytes, 512, "512 B"),
        (units.format_bytes, "", "–"),
        (units.format_us, 850, "850 µs"),
        (units.format_us, 23_456, "23.5 ms"),
        (units.format_pct, 12.345, "12.3 %"),
        (units.format_seconds, 1.5, "1.50 s"),
        (units.format_seconds, None, "–"),
    ],
)
def test_shown_figures(func, value, text):
    assert func(value) == text


def test_template_filters_are_the_units_functions():
    # One formatter per figure, wherever it is printed: the filters are the functions.
    assert units.register.filters == {
        "bps": units.format_bps,
        "bytes": units.format_bytes,
        "us": units.format_us,
        "pct": units.format_pct,
        "secs": units.format_seconds,
        "interval_in_unit_of": units.format_interval,
    }


@pytest.mark.parametrize(
    "interval,figure,text",
    [
        ((590e6, 640e6), 612e6, "590.0–640.0"),
        ((9.1e9, 9.35e9), 9.3e9, "9.10–9.35"),
        ((0.9e6, 1.2e6), 999e3, "900.0–1200.0"),  # in the figure's unit, kbit/s, not each end's own
        ((500.0, 700.0), 600.0, "500.0–700.0"),
        (None, 612e6, ""),
        ((590e6, 640e6), None, ""),
    ],
)
def test_format_interval_in_the_figures_unit(interval, figure, text):
    assert units.format_interval(interval, figure) == text


def test_templates_load_units_from_the_units_module():
    from django.template import engines

    rendered = engines["django"].from_string("{% load units %}{{ r|bps }} ({{ i|interval_in_unit_of:r }})")
    assert rendered.render({"r": 612e6, "i": (590e6, 640e6)}) == "612.0 Mbit/s (590.0–640.0)"
