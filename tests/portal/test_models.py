import json

import pytest
from django.db import IntegrityError, transaction

from portal.measure.models import Measurement, MeasurementTrace
from tests import factories


def test_measurement_slug_unguessable_and_unique(db, site, vantage):
    slugs = {factories.make_measurement(site=site, vantage=vantage).slug for _ in range(50)}
    assert len(slugs) == 50
    for slug in slugs:
        # 9 random bytes in URL-safe base64: 12 characters, 72 bits.
        assert len(slug) == 12
        assert set(slug) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert not any(slug.isdigit() for slug in slugs)


def test_measurement_slug_duplicate_rejected_by_database(db, measurement):
    with pytest.raises(IntegrityError), transaction.atomic():
        factories.make_measurement(site=measurement.site, vantage=measurement.vantage, slug=measurement.slug)


def test_measurement_permalink_is_slug_path(measurement):
    assert measurement.get_absolute_url() == f"/m/{measurement.slug}/"


def test_headline_bps_quick_when_entered(done_measurement):
    assert done_measurement.headline_bps == 9.3e9


def test_headline_bps_cumulative_when_quick_not_entered(db, site, vantage):
    result = factories.sample_result_event(quick_mode_entered=False, quick_bps=None, cumulative_bps=7.5e9)
    m = factories.make_done_measurement(site=site, vantage=vantage, result=result)
    assert m.headline_bps == 7.5e9


def test_headline_bps_none_while_queued(measurement):
    assert measurement.headline_bps is None


@pytest.mark.parametrize("status,finished", [("queued", False), ("running", False), ("done", True), ("failed", True)])
def test_is_finished_by_status(db, site, vantage, status, finished):
    m = factories.make_measurement(site=site, vantage=vantage, status=status)
    assert m.is_finished is finished


def test_trace_round_trip_exact(db, done_measurement):
    expected = factories.sample_trace_dict()
    loaded = Measurement.objects.get(pk=done_measurement.pk).trace.to_dict()
    assert loaded == expected
    assert loaded["streams"][0]["ssthresh_bytes"][:2] == [None, None]


def test_trace_round_trip_exact_floats_many_streams(db, site, vantage):
    trace = factories.sample_trace_dict(n=3000, streams=(1, 3, 4, 5))
    trace["inst_bps"] = [x / 3.0 for x in trace["inst_bps"]]  # values with no short decimal form
    m = factories.make_done_measurement(site=site, vantage=vantage, trace=trace)
    stored = MeasurementTrace.objects.get(pk=m.pk)
    assert stored.to_dict() == trace
    assert stored.sample_count == 3000
    assert stored.stream_count == 4
    # Stored compressed: well below the size of the JSON it holds.
    assert len(bytes(stored.data)) < len(json.dumps(trace)) / 3


def test_result_fields_copied_from_result_event(done_measurement):
    m = done_measurement
    assert (m.quick_mode_entered, m.quick_bps, m.cumulative_bps, m.full_bps) == (True, 9.3e9, 8.1e9, None)
    assert (m.bytes_sent, m.server_bytes, m.elapsed_s, m.slow_start_end_s) == (1234567890, 1234500000, 1.86, 0.84)
    assert (m.rule, m.retransmits, m.rtt_us, m.min_rtt_us, m.mss_bytes) == ("paper_cwnd_stable", 0, 45, 12, 65483)
    assert (m.window_requested_bytes, m.window_given_bytes, m.congestion_used) == (None, 2626560, "bbr")
    assert (m.time_saved_pct, m.traffic_saved_pct, m.full_time_s, m.full_bytes_estimate) == (
        81.4,
        89.4,
        10,
        11625000000,
    )
    assert (m.validate_quick_bps, m.validate_error_pct) == (None, None)
    assert m.result["event"] == "result"


def test_one_running_per_site_enforced_by_database(db, site, make_vantage):
    factories.make_measurement(site=site, vantage=make_vantage(), status="running")
    with pytest.raises(IntegrityError), transaction.atomic():
        factories.make_measurement(site=site, vantage=make_vantage(), status="running")
    # Other sites and other statuses are unaffected.
    factories.make_measurement(site=site, vantage=make_vantage(), status="queued")
    factories.make_measurement(site=factories.make_site(), vantage=make_vantage(), status="running")


@pytest.mark.parametrize(
    "mode,entered,converged,ci_pct,basis",
    [
        ("quick", True, True, 2.1, "quick-mode estimate, converged in 1.80 s"),
        ("quick", True, None, 2.1, "quick-mode estimate, 95 % interval"),
        ("quick", True, False, None, "quick mode did not converge: the full run's average"),
        ("quick", True, None, None, "quick-mode estimate"),
        ("quick", False, None, None, "quick mode not entered: whole-run average"),
        ("full", False, None, None, "full run average"),
        ("validate", True, True, 2.1, "quick-mode estimate, converged in 1.80 s"),
    ],
)
def test_measurement_headline_basis_words_each_case(mode, entered, converged, ci_pct, basis):
    m = Measurement(mode=mode, quick_mode_entered=entered, quick_converged=converged, quick_ci_pct=ci_pct)
    m.elapsed_s = 1.8
    assert m.headline_basis == basis


def test_measurement_share_description_escapes_stored_names(db):
    site = factories.make_site(name="A & B", slug="ab", host="h.example")
    vantage = factories.make_vantage(name="far")
    m = factories.make_measurement(site=site, vantage=vantage, mode="full", streams=4)
    m.elapsed_s, m.rtt_us, m.retransmits = 20.0, 23_456, None
    assert m.share_description == (
        "Full-length TCP throughput from far to A &amp; B (h.example) over 20.00 s, 4 streams. RTT 23.5 ms, ? retransmits."
    )
