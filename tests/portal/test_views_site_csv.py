import datetime

import pytest
from django.test import Client

from tests import factories
from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)

UTC = datetime.timezone.utc
HEADER = (
    "slug,site,vantage,mode,status,created_at,started_at,finished_at,duration_s,streams,window_bytes,congestion,"
    "headline_bps,headline_mark,quick_mode_entered,quick_bps,cumulative_bps,full_bps,slow_start_end_s,rule,elapsed_s,bytes_sent,"
    "server_bytes,retransmits,rtt_us,min_rtt_us,mss_bytes,window_requested_bytes,window_given_bytes,"
    "congestion_used,time_saved_pct,traffic_saved_pct,validate_quick_bps,validate_error_pct,quick_ci_pct,"
    "quick_window_s,quick_converged,validate_quick_ci_pct,validate_quick_converged,peer_window_bytes,"
    "rwnd_limited_pct,window_limited,quick_held_by,"
    "quick_answered,quick_lo_bps,quick_hi_bps,quick_bound_by,quick_bound_text,validate_quick_answered,failure_code,failure_reason\r\n"
)


def _at(day, hour=12):
    return datetime.datetime(2026, 3, day, hour, 0, tzinfo=UTC)


@pytest.fixture
def rows(site, vantage):
    done = factories.make_done_measurement(
        site=site,
        vantage=vantage,
        slug="done-0301",
        created_at=_at(1),
        started_at=_at(1),
        finished_at=_at(1) + datetime.timedelta(seconds=2),
        window_bytes=262144,
        congestion="cubic",
    )
    failed = factories.make_measurement(
        site=site,
        vantage=vantage,
        slug="fail-0302",
        status="failed",
        created_at=_at(2, hour=23),
        failure_code="connect_refused",
        failure_reason='connect to 127.0.0.1 port 5201: "refused", sorry',
    )
    late = factories.make_measurement(site=site, vantage=vantage, slug="queued-0305", created_at=_at(5, hour=0))
    return done, failed, late


DONE_ROW = (
    "done-0301,loopback,local,quick,done,2026-03-01T12:00:00+00:00,2026-03-01T12:00:00+00:00,"
    "2026-03-01T12:00:02+00:00,10,1,262144,cubic,9300000000.0,estimate,true,9300000000.0,8100000000.0,,0.84,"
    "paper_cwnd_stable,1.86,1234567890,1234500000,0,45,12,65483,,2626560,bbr,81.4,89.4,,,,1.0,,,,,,,,,,,,,,,\r\n"
)
FAILED_ROW = (
    "fail-0302,loopback,local,quick,failed,2026-03-02T23:00:00+00:00,,,10,1,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
    ",,,,,,connect_refused,"
    # Public: the code's meaning, never the stored reason (host:port, stderr).
    "nothing listens on the site's port\r\n"
)
QUEUED_ROW = (
    "queued-0305,loopback,local,quick,queued,2026-03-05T00:00:00+00:00,,,10,1,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
    ",,,,,,\r\n"
)


def _body(response):
    return b"".join(response.streaming_content).decode()


@pytest.mark.parametrize("logged_in", [False, True])
def test_site_csv_exact_bytes(rows, user, logged_in):
    c = Client()
    if logged_in:
        c.force_login(user)
    response = c.get("/sites/loopback/measurements.csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="quickprobe-loopback-measurements.csv"'
    assert _body(response) == HEADER + DONE_ROW + FAILED_ROW + QUEUED_ROW


def test_site_csv_since_until_inclusive_days(client, rows):
    body = _body(client.get("/sites/loopback/measurements.csv?since=2026-03-02&until=2026-03-02"))
    assert body == HEADER + FAILED_ROW


def test_site_csv_since_only(client, rows):
    assert _body(client.get("/sites/loopback/measurements.csv?since=2026-03-03")) == HEADER + QUEUED_ROW


def test_site_csv_until_only(client, rows):
    assert _body(client.get("/sites/loopback/measurements.csv?until=2026-03-01")) == HEADER + DONE_ROW


def test_site_csv_empty_params_mean_no_filter(client, rows):
    body = _body(client.get("/sites/loopback/measurements.csv?since=&until="))
    assert body == HEADER + DONE_ROW + FAILED_ROW + QUEUED_ROW


def test_site_csv_other_sites_excluded(client, rows, make_site, vantage):
    other = make_site(slug="elsewhere")
    factories.make_measurement(site=other, vantage=vantage, slug="other-one", created_at=_at(1))
    assert "other-one" not in _body(client.get("/sites/loopback/measurements.csv"))


# One grammar with the API's CSV (csvexport.parse_period). Until issue 10 the site CSV took dates
# only and worded its errors "since='x' is not a date: use YYYY-MM-DD (e.g. 2026-01-31), or leave
# since out." and "since=A is after until=B: since must be on or before until."
NOT_A_DATE = "is not a date: use YYYY-MM-DD or an ISO 8601 datetime such as 2026-11-22T08:00:00Z."


@pytest.mark.parametrize(
    "query, message",
    [
        ("since=2026-13-01", f"since '2026-13-01' {NOT_A_DATE}"),
        ("until=yesterday", f"until 'yesterday' {NOT_A_DATE}"),
        ("since=20260301", f"since '20260301' {NOT_A_DATE}"),
        ("since=2026-W09-1", f"since '2026-W09-1' {NOT_A_DATE}"),
        ("since=2026-03-05&until=2026-03-01", "until must be later than since."),
        (
            "since=x&until=9999-12-31",
            f"since 'x' {NOT_A_DATE}\nuntil '9999-12-31' is out of range: allowed 1970-01-01 to 2999-12-31.",
        ),
    ],
)
def test_site_csv_bad_dates_400_with_message(client, rows, query, message):
    response = client.get(f"/sites/loopback/measurements.csv?{query}")
    assert response.status_code == 400
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == message


def test_site_csv_unknown_site_404(client, db):
    assert client.get("/sites/nope/measurements.csv").status_code == 404


def test_site_csv_headline_falls_back_to_cumulative_when_quick_mode_not_entered(site, vantage):
    result = factories.sample_result_event(quick_mode_entered=False, quick_bps=None, cumulative_bps=4.2e8)
    factories.make_done_measurement(site=site, vantage=vantage, slug="noquick", result=result)
    lines = _body(Client().get("/sites/loopback/measurements.csv")).splitlines()
    header = lines[0].split(",")
    row = dict(zip(header, lines[1].split(",")))
    assert (row["headline_bps"], row["quick_mode_entered"], row["quick_bps"], row["cumulative_bps"]) == (
        "420000000.0",
        "false",
        "",
        "420000000.0",
    )
