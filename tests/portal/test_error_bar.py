"""Issue 7 item 7: the quick estimate's error bar on the permalink, the site table, the history
chart, the CSV and the API; a quick estimate that did not converge is never shown as a plain
number (the full run it fell back to is the result); older rows without the fields stay valid."""

import csv
import io
import re

import pytest

from portal.measure.models import Measurement
from portal.measure.results import TraceBuilder, trace_csv_rows
from tests import factories

pytestmark = pytest.mark.django_db


def _quick(site, vantage, **result):
    return factories.make_done_measurement(site=site, vantage=vantage, result=factories.sample_result_event(**result))


def test_permalink_converged_shows_error_bar(client, site, vantage):
    m = _quick(
        site, vantage, quick_bps=612e6, quick_ci_pct=2.1, quick_converged=True, quick_window_s=1.2, elapsed_s=1.8
    )
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert '<span class="figure" id="headline">612.0 Mbit/s ± 2.1 %</span>' in html
    assert "quick-mode estimate, converged in 1.80 s" in html
    assert "612.0 Mbit/s ± 2.1 % (converged; window 1.20 s)" in html


def test_permalink_not_converged_shows_full_run_not_estimate(client, site, vantage):
    m = _quick(
        site,
        vantage,
        quick_bps=90e6,
        quick_ci_pct=14.0,
        quick_converged=False,
        quick_window_s=5.0,
        cumulative_bps=142e6,
        full_bps=142e6,
        elapsed_s=10.0,
    )
    assert m.headline_bps == 142e6 and not m.shows_error_bar
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert '<span class="figure" id="headline">142.0 Mbit/s</span>' in html
    assert "quick mode did not converge: the full run's average" in html
    assert "90.0 Mbit/s ± 14.0 % (did not converge in a 5.00 s window: not the result, the full run is)" in html
    site_html = client.get("/sites/loopback/").content.decode()
    assert '142.0 Mbit/s <span class="tag warn"' in site_html and "90.0 Mbit/s" not in site_html


def test_permalink_not_converged_says_what_held_the_window_open(client, site, vantage):
    m = _quick(
        site,
        vantage,
        quick_bps=47e6,
        quick_ci_pct=2.8,
        quick_converged=False,
        quick_window_s=5.0,
        quick_held_by="loss_free",
        cumulative_bps=47.3e6,
        full_bps=47.3e6,
        elapsed_s=20.0,
    )
    assert m.quick_held_by == "loss_free"
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert (
        "47.0 Mbit/s ± 2.8 % (did not converge in a 5.00 s window: not the result, the full run is; "
        "held open by: too few loss-free packets to rule out random loss)"
    ) in html
    # a value this portal does not know yet (a newer prober) is shown as it came
    m.quick_held_by = "new_rule"
    assert m.quick_held_by_text == "new_rule"
    # a converged window was held by nothing, whatever the row says
    m.quick_converged = True
    assert m.quick_held_by_text == ""


def test_permalink_older_row_without_error_bar_fields(client, site, vantage):
    result = factories.sample_result_event(quick_bps=500e6)
    for key in ("quick_ci_pct", "quick_converged", "quick_window_s"):
        result.pop(key, None)
    m = factories.make_done_measurement(site=site, vantage=vantage, result=result)
    assert (m.quick_ci_pct, m.quick_converged, m.quick_window_s) == (None, None, None)
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert '<span class="figure" id="headline">500.0 Mbit/s</span>' in html
    assert "±" not in html.split('id="results"')[1].split("</dl>")[0]


def test_validate_quick_estimate_error_bar(client, site, vantage):
    result = factories.sample_result_event(
        mode="validate",
        quick_mode_entered=True,
        cumulative_bps=100e6,
        full_bps=100e6,
        quick_converged=None,
        validate={
            "quick_bps": 102e6,
            "error_pct": 2.0,
            "quick_ci_pct": 1.5,
            "quick_converged": True,
            "quick_window_s": 1.1,
        },
    )
    m = factories.make_done_measurement(site=site, vantage=vantage, mode="validate", result=result)
    assert (m.validate_quick_ci_pct, m.validate_quick_converged) == (1.5, True)
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert '<dd id="validate-quick">102.0 Mbit/s ± 1.5 % (2.0 % vs full)</dd>' in html


def test_history_chart_error_bars_only_for_converged(client, site, vantage):
    good = _quick(site, vantage, quick_bps=612e6, quick_ci_pct=2.1, quick_converged=True)
    bad = _quick(site, vantage, quick_bps=90e6, quick_ci_pct=14.0, quick_converged=False, cumulative_bps=142e6)
    from portal.measure import paths

    quick = {p["slug"]: p for p in paths.chart_points(site.pk, vantage.pk)["quick"]}
    assert (quick[good.slug]["y"], quick[good.slug]["ci_pct"], quick[good.slug]["converged"]) == (612e6, 2.1, True)
    assert quick[bad.slug]["y"] == 142e6 and quick[bad.slug]["converged"] is False and "ci_pct" not in quick[bad.slug]


def test_csv_and_api_carry_error_bar_fields(api_client, site, vantage):
    m = _quick(site, vantage, quick_bps=612e6, quick_ci_pct=2.1, quick_converged=True, quick_window_s=1.2)
    rows = list(
        csv.DictReader(
            io.StringIO(b"".join(api_client.get("/api/v1/measurements.csv?site=loopback").streaming_content).decode())
        )
    )
    assert (rows[0]["quick_ci_pct"], rows[0]["quick_converged"], rows[0]["quick_window_s"]) == ("2.1", "true", "1.2")
    results = api_client.get(f"/api/v1/measurements/{m.slug}").json()["results"]
    assert (results["quick_ci_pct"], results["quick_converged"], results["quick_window_s"]) == (2.1, True, 1.2)
    # quick_held_by is "" when the window converged (nothing held it open)
    assert rows[0]["quick_held_by"] == "" and results["quick_held_by"] == ""


def test_csv_and_api_carry_quick_held_by_when_not_converged(api_client, site, vantage):
    m = _quick(site, vantage, quick_bps=47e6, quick_converged=False, quick_held_by="sawtooth", cumulative_bps=47.3e6)
    rows = list(
        csv.DictReader(
            io.StringIO(b"".join(api_client.get("/api/v1/measurements.csv?site=loopback").streaming_content).decode())
        )
    )
    assert (rows[0]["quick_converged"], rows[0]["quick_held_by"]) == ("false", "sawtooth")
    assert api_client.get(f"/api/v1/measurements/{m.slug}").json()["results"]["quick_held_by"] == "sawtooth"


def test_trace_keeps_bbr_state_and_csv_only_when_bbr():
    builder = TraceBuilder()
    for t, mode, bw in ((0.1, "startup", 5e8), (0.2, "probe_bw", 9e8)):
        builder.add_sample(
            {
                "t": t,
                "inst_bps": 1,
                "cumu_bps": 1,
                "cwnd_bytes": 1,
                "streams": [
                    {
                        "id": 1,
                        "cwnd_bytes": 1,
                        "bbr": {"mode": mode, "bw_bps": bw, "min_rtt_us": 40, "pacing_gain": 2.89, "cwnd_gain": 2.0},
                    }
                ],
            }
        )
    trace = builder.to_dict()
    assert trace["streams"][0]["bbr_mode"] == ["startup", "probe_bw"]
    assert trace["streams"][0]["bbr_bw_bps"] == [5e8, 9e8]
    header = next(trace_csv_rows(trace))
    assert header[-5:] == [
        "s1_bbr_mode",
        "s1_bbr_bw_bps",
        "s1_bbr_min_rtt_us",
        "s1_bbr_pacing_gain",
        "s1_bbr_cwnd_gain",
    ]
    cubic = TraceBuilder()
    cubic.add_sample(
        {"t": 0.1, "inst_bps": 1, "cumu_bps": 1, "cwnd_bytes": 1, "streams": [{"id": 1, "cwnd_bytes": 1, "bbr": None}]}
    )
    assert not any("bbr" in column for column in next(trace_csv_rows(cubic.to_dict())))


def test_overview_headline_uses_full_run_when_not_converged(client, site, vantage):
    _quick(site, vantage, quick_bps=90e6, quick_converged=False, cumulative_bps=142e6)
    assert "142.0 Mbit/s" in client.get("/").content.decode()
    assert Measurement.objects.count() == 1


def test_quick_hold_names_agree_between_prober_docs_and_portal():
    # the prober's names (src/qwnames.c), the contract (EVENTS.md) and the portal's words
    from portal.measure.vocab import QUICK_HOLDS
    from tests.prober import qp

    source = (qp.ROOT / "prober" / "src" / "qwnames.c").read_text()
    prober_names = re.findall(r"\[QW_HOLD_\w+\] = \{ \"(\w+)\"", source)
    documented = qp.quick_holds()
    assert len(documented) == 21 and {
        "loss_free",
        "bw_rising",
        "random_loss",
        "growing",
        "lt_bw",
        "receiver_window",
        "timeouts",
        "reorder_overflow",
        "shared",
    } <= set(documented)
    assert sorted(documented) == sorted(QUICK_HOLDS)
    # the prober also names not_started, which never reaches the result: the window did not
    # start, so quick mode was not entered and quick_held_by is null
    assert sorted(prober_names) == sorted([*documented, "not_started"])


def test_quick_bound_names_agree_between_prober_and_docs():
    # every evidence the prober may name as quick_bound_by (src/qwnames.c) is in the contract
    # (EVENTS.md), which the portal and the bench read, and nothing else is
    from tests.prober import qp

    source = (qp.ROOT / "prober" / "src" / "qwnames.c").read_text()
    prober_names = re.findall(r"\[QW_BOUND_\w+\] = \{ \"(\w+)\"", source)
    assert len(prober_names) == 15 and {"reordering", "timeouts", "reorder_overflow", "shared"} <= set(prober_names)
    assert sorted(qp.quick_bounds()) == sorted(prober_names)


def test_quick_bound_codes_and_words_fit_the_portal_columns():
    # the portal stores quick_bound_by and quick_bound_text cut to their columns' lengths
    # (results.result_fields): every code and sentence the prober can send fits whole
    from portal.measure.vocab import RESULT_FIELDS
    from tests.prober import qp

    source = (qp.ROOT / "prober" / "src" / "qwnames.c").read_text()
    table = source[source.index("bound_names[]") :]
    entries = re.findall(r'\[QW_BOUND_\w+\] = \{\s*"(\w+)",((?:\s*"[^"]*")+)', table)
    column = {f.name: f.max_length for f in RESULT_FIELDS}
    assert len(entries) == 15
    for code, words in entries:
        text = "".join(re.findall(r'"([^"]*)"', words))
        assert len(code) <= column["quick_bound_by"], code
        assert 40 <= len(text) <= column["quick_bound_text"], (code, len(text))
