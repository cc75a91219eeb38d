"""The vocabulary's promises: every failure code is documented in the README, the result
fields are the model's columns and are read from the `result` event as declared."""

import re
from pathlib import Path

from portal.measure import vocab
from portal.measure.models import Measurement
from portal.measure.results import result_fields

README = Path(__file__).resolve().parents[2] / "README.md"


def test_failure_code_table_readme_equals_vocab():
    rows = re.findall(r"^\| `([a-z_]+)` \| (portal|prober) \| (.+) \|$", README.read_text(), re.M)
    expected = [(c.value, "prober" if c in vocab.PROBER_CODES else "portal", c.label) for c in vocab.FailureCode]
    assert rows == expected


def test_prober_codes_readme_events_md_listed():
    events = (README.parent / "prober" / "EVENTS.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", events[events.index("### `error`") :], re.M))
    assert {c.value for c in vocab.PROBER_CODES} <= documented


def test_result_fields_are_model_columns():
    columns = {f.name: f for f in Measurement._meta.get_fields()}
    for field in vocab.RESULT_FIELDS:
        assert columns[field.name].null == (field.kind != "str"), field.name


def test_result_fields_read_nested_and_missing_values():
    event = {
        "quick_bps": 1.5e9,
        "congestion": "bbr",
        "window": {"requested_bytes": 4096, "given_bytes": 8192},
        "validate": None,
        "rule": None,
    }
    fields = result_fields(event)
    assert fields["quick_bps"] == 1.5e9
    assert fields["congestion_used"] == "bbr"
    assert (fields["window_requested_bytes"], fields["window_given_bytes"]) == (4096, 8192)
    assert fields["validate_quick_bps"] is None and fields["rule"] == "" and fields["result"] is event
    assert set(fields) == {*vocab.RESULT_FIELD_NAMES, "result"}
