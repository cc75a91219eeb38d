"""The CSV exports' shared parts: the since/until grammar, formula escaping, one line ending."""

import csv
import datetime
import io

import pytest
from django.test import Client

from portal.measure.csvexport import BadQuery, Period, escape_formula, parse_period
from tests import factories
from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)

UTC = datetime.timezone.utc


def _at(*args):
    return datetime.datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    "params, period",
    [
        ({}, Period()),
        ({"since": "", "until": "  "}, Period()),
        ({"since": "2026-03-01"}, Period(since=_at(2026, 3, 1))),
        ({"until": "2026-03-01"}, Period(until=_at(2026, 3, 2), until_is_day=True)),
        ({"since": "2026-03-01T08:30:00Z"}, Period(since=_at(2026, 3, 1, 8, 30))),
        ({"since": "2026-03-01 08:30"}, Period(since=_at(2026, 3, 1, 8, 30))),  # naive means UTC
        ({"until": "2026-03-01T08:30:00.25+02:00"}, Period(until=_at(2026, 3, 1, 6, 30, 0, 250000))),
        ({"until": "2026-03-01T08:30:00 02:00"}, Period(until=_at(2026, 3, 1, 6, 30))),  # an unencoded '+'
        ({"since": "2026-03-01T08:30-0130"}, Period(since=_at(2026, 3, 1, 10, 0))),
        ({"since": "1970-01-01", "until": "2999-12-31"}, Period(_at(1970, 1, 1), _at(3000, 1, 1), True)),
        ({"since": "2026-03-01", "until": "2026-03-01"}, Period(_at(2026, 3, 1), _at(2026, 3, 2), True)),
        (
            {"since": "2026-03-01T10:00Z", "until": "2026-03-01T10:00Z"},
            Period(_at(2026, 3, 1, 10), _at(2026, 3, 1, 10)),
        ),
    ],
)
def test_parse_period_accepts_dates_and_datetimes(params, period):
    assert parse_period(params) == period


@pytest.mark.parametrize(
    "params, errors",
    [
        (
            {"since": "2026-3-1"},
            {
                "since": [
                    "since '2026-3-1' is not a date: use YYYY-MM-DD or an ISO 8601 datetime "
                    "such as 2026-11-22T08:00:00Z."
                ]
            },
        ),
        (
            {"until": "2026-11-22T24:00"},
            {
                "until": [
                    "until '2026-11-22T24:00' is not a date: use YYYY-MM-DD or an ISO 8601 "
                    "datetime such as 2026-11-22T08:00:00Z."
                ]
            },
        ),
        ({"until": "9999-12-31"}, {"until": ["until '9999-12-31' is out of range: allowed 1970-01-01 to 2999-12-31."]}),
        (
            {"since": "1969-12-31T23:59Z"},
            {"since": ["since '1969-12-31T23:59Z' is out of range: allowed 1970-01-01 to 2999-12-31."]},
        ),
        ({"since": "2026-03-02", "until": "2026-03-01"}, {"until": ["until must be later than since."]}),
        (
            {"since": "2026-03-01T10:00:01Z", "until": "2026-03-01T10:00Z"},
            {"until": ["until must be later than since."]},
        ),
        ({"since": "2026-03-02T00:00Z", "until": "2026-03-01"}, {"until": ["until must be later than since."]}),
        (
            {"since": "2026-01-01" + "9" * 100},
            {
                "since": [
                    f"since '{'2026-01-01' + '9' * 30}...' is not a date: use YYYY-MM-DD or an ISO 8601 datetime such as "
                    "2026-11-22T08:00:00Z."
                ]
            },
        ),
    ],
)
def test_parse_period_refuses_with_the_field_and_what_is_allowed(params, errors):
    with pytest.raises(BadQuery) as caught:
        parse_period(params)
    assert caught.value.errors == errors


@pytest.mark.parametrize(
    "value, shown",
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1", "'+1"),
        ("-abc", "'-abc"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("a=b", "a=b"),
        ("", ""),
        (-1.5, -1.5),
        (-3, -3),
        (None, None),
    ],
)
def test_escape_formula_prefixes_only_text_starting_a_formula(value, shown):
    assert escape_formula(value) == shown


FORMULAS = ["=1+2", "+1", "-x", "@cmd", "\tTAB", "\rCR"]


def _rows(response):
    assert response.status_code == 200
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))


@pytest.mark.parametrize(
    "path, auth", [("/sites/loopback/measurements.csv", False), ("/api/v1/measurements.csv", True)]
)
def test_measurement_csvs_escape_formulas_and_stay_parseable(site, vantage, api_token, path, auth):
    for i, text in enumerate(FORMULAS):
        # An unknown failure code is stored as it comes (the prober's own text): a formula here.
        factories.make_measurement(
            site=site,
            vantage=vantage,
            slug=f"-slug{i}",
            status="failed",
            failure_code=text,
            created_at=_at(2026, 3, 1) + datetime.timedelta(minutes=i),
        )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}") if auth else Client()
    rows = _rows(client.get(path))
    header = rows[0]
    got = [(row[header.index("slug")], row[header.index("failure_code")]) for row in rows[1:]]
    assert got == [(f"'-slug{i}", "'" + text) for i, text in enumerate(FORMULAS)]


def test_trace_csv_negative_numbers_stay_numbers(site, vantage):
    trace = factories.sample_trace_dict(n=1)
    trace["inst_bps"] = [-1.0]
    m = factories.make_done_measurement(site=site, vantage=vantage, trace=trace)
    rows = _rows(Client().get(f"/m/{m.slug}/trace.csv"))
    assert rows[1][1] == "-1.0"


def test_both_measurement_csvs_have_the_same_bytes(site, vantage, api_token):
    factories.make_done_measurement(site=site, vantage=vantage, slug="same-bytes", created_at=_at(2026, 3, 1, 12))
    query = "?since=2026-03-01T11:00Z&until=2026-03-01"
    site_csv = Client().get(f"/sites/loopback/measurements.csv{query}")
    api_csv = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}").get(f"/api/v1/measurements.csv{query}&site=loopback")
    site_body, api_body = (b"".join(r.streaming_content) for r in (site_csv, api_csv))
    assert site_body == api_body
    assert site_body.count(b"\r\n") == 2 and b"same-bytes" in site_body


def test_new_slugs_never_start_with_a_formula_character():
    from portal.measure.models import new_measurement_slug

    # token_urlsafe starts with '-' once in 64: 2,000 draws all miss it with odds of 1e-14.
    slugs = [new_measurement_slug() for _ in range(2000)]
    assert not [s for s in slugs if s.startswith(("-", "=", "+", "@"))]
    assert len(set(slugs)) == 2000 and {len(s) for s in slugs} == {12}


@pytest.mark.parametrize(
    "text, units, value",
    [
        ("65536", "KM", 65536),
        (" 64 k ", "KM", 65536),
        ("4M", "KM", 4 * 1024**2),
        ("10G", "KMGT", 10 * 1024**3),
        ("2t", "KMGT", 2 * 1024**4),
    ],
)
def test_parse_size_one_grammar(text, units, value):
    from portal.measure.units import parse_size

    assert parse_size(text, units) == value


@pytest.mark.parametrize("text", ["2G", "1.5M", "-4K", "4KB", "K", "", "٤K"])
def test_parse_size_refuses_what_the_pattern_refuses(text):
    import re

    from portal.measure.units import SIZE_PATTERN, parse_size

    with pytest.raises(ValueError):
        parse_size(text)
    assert not re.fullmatch(SIZE_PATTERN, text, re.ASCII)
