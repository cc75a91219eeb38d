"""Issue 27 items 2 and 3: one definition of what quick mode saved (paths.quick_saving, against a
run of the test's own -t) checked against hand-computed figures and shown the same on the
permalink, the path page and the CSV; one rule marking a quick figure (Measurement.quick_mark_of)
that agrees with the headline rule in Python and SQL; the overview and the grid agree on what
"latest" means."""

import csv
import datetime
import io
import itertools

import pytest
from django.test import Client
from django.utils import timezone

from portal.measure import paths
from portal.measure.models import QUICK_ANSWERS, Measurement
from portal.measure.paths import Saving, headline_expr, quick_saving
from tests import factories
from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)

# --- the saving function, by hand ---------------------------------------------------------------


def test_quick_saving_answered_against_its_own_t():
    # -t 10 at 9.3 Gbit/s sends 9.3e9 x 10 / 8 = 11,625,000,000 bytes; the test took 1.86 s and
    # sent 1,234,567,890: 8.14 s and 10,390,432,110 bytes saved.
    s = quick_saving(True, 10, 1.86, 1_234_567_890, 9.3e9)
    assert s == Saving(1, 10 - 1.86, 10.0, 10_390_432_110.0, 11_625_000_000.0)
    assert s.time_pct == pytest.approx(81.4)
    assert s.traffic_pct == pytest.approx(100 * 10_390_432_110 / 11_625_000_000)  # 89.38...


def test_quick_saving_not_answered_saved_nothing_not_a_negative_drain():
    # It fell back (or never entered quick mode): it ran its whole -t 5, and the 0.03 s drain
    # past it is not a loss: 0 of 5 s, 0 of 1e9 x 5 / 8 = 625,000,000 bytes.
    s = quick_saving(False, 5, 5.03, 630_000_000, 1e9)
    assert s == Saving(1, 0.0, 5.0, 0.0, 625_000_000.0)
    assert (s.time_pct, s.traffic_pct) == (0.0, 0.0)


def test_quick_saving_unknown_rate_leaves_traffic_out():
    s = quick_saving(True, 10, 2.0, 500, None)
    assert s == Saving(1, 8.0, 10.0, 0.0, 0.0)
    assert s.time_pct == 80.0 and s.traffic_pct is None


def test_quick_saving_of_sums_is_the_sum_of_savings():
    # -t 5: 5 - 2 = 3 s; 8e8 x 5 / 8 = 5e8 bytes, sent 1e8. -t 20: 17 s; 2e9 x 20 / 8 = 5e9, sent 4e8.
    one = quick_saving(True, 5, 2.0, 100_000_000, 8e8)
    two = quick_saving(True, 20, 3.0, 400_000_000, 2e9)
    assert one + two == Saving(2, 20.0, 25.0, 5.0e9, 5.5e9)
    # The path page's form: the sums, with the duration-weighted rate (8e8 x 5 + 2e9 x 20) / 25.
    assert quick_saving(True, 25, 5.0, 500_000_000, 1.76e9, tests=2) == Saving(2, 20.0, 25.0, 5.0e9, 5.5e9)
    assert (one + two).time_pct == 80.0


# --- the one marking rule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode,entered,answered,converged,mark",
    [
        ("full", None, None, None, ""),
        ("validate", True, True, True, ""),
        ("quick", False, False, None, "not_entered"),
        ("quick", True, True, True, "converged"),
        ("quick", True, True, False, "deadline"),
        ("quick", True, False, False, "fell_back"),
        ("quick", True, None, False, "fell_back"),  # before issue 24: not converged = fell back
        ("quick", True, None, True, "converged"),
        ("quick", True, None, None, "estimate"),  # before the converging window
    ],
)
def test_quick_mark_of_each_case(mode, entered, answered, converged, mark):
    assert Measurement.quick_mark_of(mode, entered, answered, converged) == mark


@pytest.mark.django_db
def test_quick_mark_agrees_with_the_headline_in_python_and_sql(site, vantage):
    # Every combination of the three flags: the figure is quick_bps exactly when the mark says
    # quick mode answered, on the model and in the SQL the listings use.
    rows = []
    for entered, answered, converged in itertools.product((True, False), (True, False, None), (True, False, None)):
        rows.append(
            factories.make_done_measurement(
                site=site,
                vantage=vantage,
                result=factories.sample_result_event(
                    quick_mode_entered=entered, quick_answered=answered, quick_converged=converged
                ),
            )
        )
    sql = dict(Measurement.objects.annotate(h=headline_expr()).values_list("pk", "h"))
    for m in rows:
        quick = m.quick_mark in QUICK_ANSWERS
        assert (m.headline_bps == 9.3e9) is quick and (sql[m.pk] == 9.3e9) is quick, m.quick_mark
        assert m.quick_fell_back is (m.quick_mark == "fell_back")


# --- shown the same: permalink, path page, CSV --------------------------------------------------


@pytest.mark.django_db
def test_saving_is_the_same_on_permalink_path_page_and_csv(client, site, vantage):
    now = timezone.now()
    answered = factories.make_done_measurement(
        site=site,
        vantage=vantage,
        duration_s=5,
        created_at=now - datetime.timedelta(minutes=2),
        result=factories.sample_result_event(
            quick_bps=8e8, quick_answered=True, quick_converged=True, elapsed_s=2.0, bytes_sent=100_000_000
        ),
    )
    fell_back = factories.make_done_measurement(
        site=site,
        vantage=vantage,
        duration_s=20,
        created_at=now - datetime.timedelta(minutes=1),
        result=factories.sample_result_event(
            quick_bps=3e9,
            quick_answered=False,
            quick_converged=False,
            cumulative_bps=2e9,
            full_bps=2e9,
            elapsed_s=20.04,
            bytes_sent=5_010_000_000,
            time_saved_pct=-0.2,  # the prober counts the drain past -t as a loss
            traffic_saved_pct=-0.2,
        ),
    )
    # 5 - 2 = 3 s of 5; 8e8 x 5 / 8 = 5e8 bytes, 4e8 saved. The fallback: 0 of 20 s, 0 of 5e9.
    assert answered.saving == Saving(1, 3.0, 5.0, 4e8, 5e8)
    assert fell_back.saving == Saving(1, 0.0, 20.0, 0.0, 5e9)
    assert paths.quick_savings(Measurement.objects.all()) == Saving(2, 3.0, 25.0, 4e8, 5.5e9)

    html = client.get(f"/m/{fell_back.slug}/").content.decode()
    assert '<dd id="time-saved">0.0 s of 20 s (0.0 %)</dd>' in html and "-0.2" not in html
    html = client.get(f"/m/{answered.slug}/").content.decode()
    assert '<dd id="time-saved">3.0 s of 5 s (60.0 %)</dd>' in html
    assert '<dd id="traffic-saved">381.5 MiB of 476.8 MiB (80.0 %)</dd>' in html
    html = client.get(f"/sites/{site.slug}/?vantage={vantage.name}").content.decode()
    assert (
        '<span id="path-saved">Quick mode saved 3.0 s of 25 s (12.0 %) and 381.5 MiB of 5.12 GiB (7.3 %) over 2 '
        "quick tests in the last 90 days, against runs of each test's own -t.</span>"
    ) in html
    assert "20 s runs" not in html

    body = b"".join(client.get(f"/sites/{site.slug}/measurements.csv").streaming_content).decode()
    rows = {r["slug"]: r for r in csv.DictReader(io.StringIO(body))}
    assert (rows[answered.slug]["time_saved_pct"], rows[answered.slug]["traffic_saved_pct"]) == ("60.0", "80.0")
    assert (rows[fell_back.slug]["time_saved_pct"], rows[fell_back.slug]["traffic_saved_pct"]) == ("0.0", "0.0")


# --- listings mark the figure; the overview and the grid agree on "latest" ----------------------


@pytest.mark.django_db
def test_overview_and_grid_pick_the_same_latest_and_mark_it(site, make_vantage):
    near, far = make_vantage(name="near"), make_vantage(name="far")
    at = timezone.now() - datetime.timedelta(hours=1)

    def done(vantage, created_at, **result):
        return factories.make_done_measurement(
            site=site, vantage=vantage, created_at=created_at, result=factories.sample_result_event(**result)
        )

    done(near, at - datetime.timedelta(minutes=5), quick_bps=1e9, quick_answered=True, quick_converged=True)
    # Two tests requested at the same instant on one path: the larger pk is the later (LATEST_ORDER).
    done(far, at, quick_bps=2e9, quick_answered=True, quick_converged=True)
    newest = done(far, at, quick_bps=3e9, quick_answered=True, quick_converged=False)
    [overview] = paths.sites_overview()
    assert (overview.last_quick_slug, overview.last_quick_bps, overview.last_quick_mark) == (
        newest.slug,
        3e9,
        "deadline",
    )
    cells = {c["vantage"].name: c for c in paths.grid()["rows"][0]["cells"]}
    assert (cells["far"]["slug"], cells["far"]["bps"], cells["far"]["mark"]) == (newest.slug, 3e9, "deadline")
    assert cells["near"]["mark"] == "converged"

    client = Client()
    sites_html = client.get("/").content.decode()
    grid_html = client.get("/grid/").content.decode()
    for html in (sites_html, grid_html):
        assert '3.00 Gbit/s <span class="tag" data-mark="deadline"' in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    "result,mark",
    [
        (dict(quick_answered=True, quick_converged=False), "deadline"),
        (dict(quick_answered=False, quick_converged=False), "fell_back"),
        (dict(quick_answered=True, quick_converged=True), "converged"),
    ],
)
def test_api_marks_the_headline_as_the_permalink_does(api_client, site, vantage, result, mark):
    m = factories.make_done_measurement(site=site, vantage=vantage, result=factories.sample_result_event(**result))
    body = api_client.get(f"/api/v1/measurements/{m.slug}").json()
    assert (body["headline_mark"], body["headline_bps"]) == (mark, m.headline_bps)
    assert m.quick_mark == mark
