import pytest

from portal.measure.forms import MeasurementForm, parse_window
from portal.measure.units import format_window
from tests import factories


def _errors(data):
    form = MeasurementForm(data=data)
    assert not form.is_valid()
    return {field: [str(m) for m in messages] for field, messages in form.errors.items()}


def test_form_minimal_valid_uses_defaults(site, vantage):
    form = MeasurementForm(data={"site": "loopback"})
    assert form.is_valid(), form.errors
    assert form.measurement_fields() == {
        "site": site,
        "vantage": vantage,
        "mode": "quick",
        "duration_s": 10,
        "streams": 1,
        "window_bytes": None,
        "congestion": "",
        "until_converged": False,
    }


def test_form_full_valid(site, vantage):
    form = MeasurementForm(
        data={
            "site": "loopback",
            "vantage": "local",
            "mode": "validate",
            "duration_s": "60",
            "streams": "16",
            "window": "256K",
            "congestion": "cubic",
        }
    )
    assert form.is_valid(), form.errors
    assert form.measurement_fields()["window_bytes"] == 262144
    assert form.measurement_fields()["congestion"] == "cubic"
    assert form.measurement_fields()["duration_s"] == 60


def test_form_site_missing_rejected(site, vantage):
    assert _errors({}) == {"site": ["site is required: give the slug of a registered site (GET /api/v1/sites)."]}


def test_form_site_unknown_rejected(site, vantage):
    assert _errors({"site": "example.com"}) == {
        "site": [
            "unknown site 'example.com': only registered sites can be tested; choose one of the sites listed at /api/v1/sites."
        ]
    }


def test_form_site_disabled_rejected(db, vantage):
    factories.make_site(slug="off", enabled=False)
    assert _errors({"site": "off"}) == {
        "site": ["site 'off' is disabled: an administrator has taken it out of service; choose another site."]
    }


@pytest.mark.parametrize(
    "value,message",
    [
        ("0", "duration_s 0 is out of range: allowed 1 to 60 seconds."),
        ("61", "duration_s 61 is out of range: allowed 1 to 60 seconds."),
        ("-5", "duration_s -5 is out of range: allowed 1 to 60 seconds."),
        ("1.5", "duration_s '1.5' is not a whole number: allowed 1 to 60 seconds."),
        ("ten", "duration_s 'ten' is not a whole number: allowed 1 to 60 seconds."),
    ],
)
def test_form_duration_out_of_bounds_rejected(site, vantage, value, message):
    assert _errors({"site": "loopback", "duration_s": value}) == {"duration_s": [message]}


@pytest.mark.parametrize(
    "value,message",
    [
        ("0", "streams 0 is out of range: allowed 1 to 16 streams."),
        ("17", "streams 17 is out of range: allowed 1 to 16 streams."),
        ("x", "streams 'x' is not a whole number: allowed 1 to 16 streams."),
    ],
)
def test_form_streams_out_of_bounds_rejected(site, vantage, value, message):
    assert _errors({"site": "loopback", "streams": value}) == {"streams": [message]}


def test_form_bounds_inclusive_accepted(site, vantage):
    for duration, streams in (("1", "1"), ("60", "16")):
        form = MeasurementForm(data={"site": "loopback", "duration_s": duration, "streams": streams})
        assert form.is_valid(), form.errors


def test_form_mode_unknown_rejected(site, vantage):
    assert _errors({"site": "loopback", "mode": "turbo"}) == {
        "mode": ["mode 'turbo' is not allowed: choose quick, full or validate."]
    }


@pytest.mark.parametrize(
    "value,message",
    [
        (
            "64G",
            "window '64G' is not a size: write a whole number of bytes, optionally followed by K or M (1024-based), "
            "from 4K to 16M, e.g. 256K; or leave it blank for the kernel's default",
        ),
        (
            "12KB",
            "window '12KB' is not a size: write a whole number of bytes, optionally followed by K or M (1024-based), "
            "from 4K to 16M, e.g. 256K; or leave it blank for the kernel's default",
        ),
        ("3K", "window 3K = 3072 bytes is out of range: allowed 4K (4096) to 16M (16777216)"),
        ("17M", "window 17M = 17825792 bytes is out of range: allowed 4K (4096) to 16M (16777216)"),
        ("4095", "window 4095 = 4095 bytes is out of range: allowed 4K (4096) to 16M (16777216)"),
    ],
)
def test_form_window_bad_rejected(site, vantage, value, message):
    assert _errors({"site": "loopback", "window": value}) == {"window": [message]}


@pytest.mark.parametrize(
    "text,value", [("4K", 4096), ("4k", 4096), ("16M", 16777216), ("65536", 65536), (" 1m ", 1048576), ("", None)]
)
def test_parse_window_suffixes_exact(text, value):
    assert parse_window(text) == value


@pytest.mark.parametrize("value,text", [(4096, "4K"), (1048576, "1M"), (5000, "5000"), (None, "")])
def test_format_window_round_trip(value, text):
    assert format_window(value) == text
    assert parse_window(text) == value


def test_form_congestion_unknown_rejected(site, vantage):
    assert _errors({"site": "loopback", "congestion": "vegas"}) == {
        "congestion": [
            "congestion 'vegas' is not available on vantage local: choose one of reno, cubic, bbr, "
            "or leave it blank for the vantage's default."
        ]
    }


def test_form_vantage_optional_only_when_single(site, vantage):
    factories.make_vantage(name="second")
    assert _errors({"site": "loopback"}) == {
        "vantage": ["vantage is required when several are enabled: choose one of local, second."]
    }


def test_form_vantage_unknown_and_disabled_rejected(site, vantage):
    factories.make_vantage(name="off", enabled=False)
    assert _errors({"site": "loopback", "vantage": "nope"}) == {
        "vantage": ["vantage 'nope' is unknown: choose one of local."]
    }
    assert _errors({"site": "loopback", "vantage": "off"}) == {
        "vantage": ["vantage 'off' is disabled: choose one of local."]
    }


def test_form_every_bad_field_reported_at_once(site, vantage):
    errors = _errors({"site": "loopback", "duration_s": "0", "streams": "99", "window": "1G", "mode": "x"})
    assert sorted(errors) == ["duration_s", "mode", "streams", "window"]
