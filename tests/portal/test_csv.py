import csv
import datetime
import io

import pytest

from portal.measure.results import trace_csv_rows
from tests import factories

UTC = datetime.timezone.utc
HEADER = (
    "slug,site,vantage,mode,status,created_at,started_at,finished_at,duration_s,streams,window_bytes,"
    "congestion,headline_bps,headline_mark,quick_mode_entered,quick_bps,cumulative_bps,full_bps,slow_start_end_s,rule,"
    "elapsed_s,bytes_sent,server_bytes,retransmits,rtt_us,min_rtt_us,mss_bytes,window_requested_bytes,"
    "window_given_bytes,congestion_used,time_saved_pct,traffic_saved_pct,validate_quick_bps,"
    "validate_error_pct,quick_ci_pct,quick_window_s,quick_converged,validate_quick_ci_pct,"
    "validate_quick_converged,peer_window_bytes,rwnd_limited_pct,window_limited,quick_held_by,"
    "quick_answered,quick_lo_bps,quick_hi_bps,quick_bound_by,quick_bound_text,validate_quick_answered,failure_code,"
    "failure_reason"
)


def at(day, hour=12):
    return datetime.datetime(2026, 11, day, hour, 0, 0, tzinfo=UTC)


def body(response):
    assert response.status_code == 200, response.content
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return b"".join(response.streaming_content).decode()


@pytest.fixture
def history(site, vantage):
    done = factories.make_done_measurement(
        site=site,
        vantage=vantage,
        slug="doneAAAAAAAA",
        created_at=at(10),
        started_at=at(10),
        finished_at=at(10, 13),
        window_bytes=65536,
    )
    failed = factories.make_measurement(
        site=site,
        vantage=vantage,
        slug="failBBBBBBBB",
        created_at=at(11),
        status="failed",
        failure_code="connect_refused",
        failure_reason="connect to 127.0.0.1 port 5201: Connection refused",
    )
    other = factories.make_measurement(vantage=vantage, slug="otherCCCCCCC", created_at=at(12))
    return done, failed, other


def test_csv_exact_content_and_header(api_client, history):
    text = body(api_client.get("/api/v1/measurements.csv?site=loopback"))
    assert text == (
        HEADER + "\r\n"
        "doneAAAAAAAA,loopback,local,quick,done,2026-11-10T12:00:00+00:00,2026-11-10T12:00:00+00:00,"
        "2026-11-10T13:00:00+00:00,10,1,65536,,9300000000.0,estimate,true,9300000000.0,8100000000.0,,0.84,paper_cwnd_stable,"
        "1.86,1234567890,1234500000,0,45,12,65483,,2626560,bbr,81.4,89.4,,,,1.0,,,,,,,,,,,,,,,\r\n"
        "failBBBBBBBB,loopback,local,quick,failed,2026-11-11T12:00:00+00:00,,,10,1,,,,,,,,,,,,,,,,,,,,,,,,,"
        ",,,,,,,,,,,,,,,"
        # Public: the code's meaning, never the stored reason (host:port, stderr).
        "connect_refused,nothing listens on the site's port\r\n"
    )


def test_csv_all_sites_oldest_first(api_client, history):
    rows = list(csv.reader(io.StringIO(body(api_client.get("/api/v1/measurements.csv")))))
    assert [r[0] for r in rows[1:]] == ["doneAAAAAAAA", "failBBBBBBBB", "otherCCCCCCC"]


@pytest.mark.parametrize(
    "query,slugs",
    [
        ("since=2026-11-11", ["failBBBBBBBB", "otherCCCCCCC"]),
        ("until=2026-11-11", ["doneAAAAAAAA", "failBBBBBBBB"]),  # a date includes the whole day
        ("since=2026-11-11&until=2026-11-11", ["failBBBBBBBB"]),
        ("until=2026-11-11T12:00:00Z", ["doneAAAAAAAA", "failBBBBBBBB"]),  # a datetime is inclusive
        ("until=2026-11-11T11:59:59Z", ["doneAAAAAAAA"]),
        ("since=2026-11-10T12:00:01%2B00:00", ["failBBBBBBBB", "otherCCCCCCC"]),
        ("since=2026-12-01", []),
    ],
)
def test_csv_date_filters(api_client, history, query, slugs):
    rows = list(csv.reader(io.StringIO(body(api_client.get(f"/api/v1/measurements.csv?{query}")))))
    assert rows[0] == HEADER.split(",")
    assert [r[0] for r in rows[1:]] == slugs


@pytest.mark.parametrize(
    "query,errors",
    [
        (
            "since=yesterday",
            {
                "since": [
                    "since 'yesterday' is not a date: use YYYY-MM-DD or an ISO 8601 datetime such as "
                    "2026-11-22T08:00:00Z."
                ]
            },
        ),
        (
            "until=2026-13-01",
            {
                "until": [
                    "until '2026-13-01' is not a date: use YYYY-MM-DD or an ISO 8601 datetime such as "
                    "2026-11-22T08:00:00Z."
                ]
            },
        ),
        ("site=nowhere", {"site": ["unknown site 'nowhere': use a slug from /api/v1/sites."]}),
        ("since=2026-11-12&until=2026-11-10", {"until": ["until must be later than since."]}),
        ("sight=loopback", {"sight": ["unknown parameter 'sight': allowed are site, since, until."]}),
    ],
)
def test_csv_bad_filters_rejected(api_client, history, query, errors):
    response = api_client.get(f"/api/v1/measurements.csv?{query}")
    assert response.status_code == 400
    assert response.json() == {"errors": errors}


def test_csv_streaming_header_before_rows(api_client, site, vantage):
    for i in range(25):
        factories.make_measurement(site=site, vantage=vantage, created_at=at(1) + datetime.timedelta(minutes=i))
    response = api_client.get("/api/v1/measurements.csv?site=loopback")
    # Nothing is read until the body is consumed: the rows come from an iterator.
    assert response.streaming
    chunks = iter(response.streaming_content)
    assert next(chunks).decode() == HEADER + "\r\n"
    rest = b"".join(chunks).decode().splitlines()
    assert len(rest) == 25


def test_trace_csv_rows_exact():
    trace = factories.sample_trace_dict(n=2, streams=(1, 3))
    rows = list(trace_csv_rows(trace))
    assert rows[0] == [
        "t",
        "inst_bps",
        "cumu_bps",
        "cwnd_bytes",
        "s1_cwnd_bytes",
        "s1_ssthresh_bytes",
        "s1_rtt_us",
        "s1_bytes_acked",
        "s1_total_retrans",
        # iperf3's stream ids 1 and 3 are streams 1 and 2 here, as in the charts (issue 27).
        "s2_cwnd_bytes",
        "s2_ssthresh_bytes",
        "s2_rtt_us",
        "s2_bytes_acked",
        "s2_total_retrans",
    ]
    assert rows[1] == [0.02, 1.0e9, 0.5e9, 1309660, 654830, "", 40, 1000000, 0, 654830, "", 40, 1000000, 0]
    assert rows[2] == [0.04, 2.0e9, 1.0e9, 2619320, 1309660, "", 41, 2000000, 0, 1309660, "", 41, 2000000, 0]
    assert len(rows) == 3
