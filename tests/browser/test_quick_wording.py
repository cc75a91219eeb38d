"""Issue 27 items 1-3 in Chromium: the request form, the footer and a permalink describe quick
mode in the one wording (templates/measure/measurement.html#quick_mode_blurb, README's "How it decides");
a permalink of a run that fell back says what held it, for how long, in words for a loopback
path, and what it saved against its own -t; the history table marks the figure the same way."""

import pytest

from tests import factories
from tests.browser.pwhelpers import log_in

pytestmark = pytest.mark.browser

PASSWORD = "browser-wording-pw-1"
BLURB = (
    "Quick mode measures from the end of slow-start until the rate converges, and answers by a deadline "
    "(100 round trips after slow-start, or 4 s after it where the rate changed level meanwhile; at most 4 s, and 5 s from the start on short paths) "
    "with a 95 % interval built from the evidence it has; "
    "asked to measure until converged, a test that has not converged by then runs its whole duration instead."
)
OLD_WORDINGS = ("one second after slow-start", "slow-start plus one second", "20 s runs")


def _text(page):
    return page.inner_text("body")


def test_form_and_footer_say_how_quick_mode_decides(watched_page, live_server):
    page = watched_page.page
    factories.make_site(name="Loopback iperf3", slug="loopback")
    factories.make_vantage(name="local")
    factories.make_user("wren", password=PASSWORD)
    log_in(page, live_server.url, "/measure/new?site=loopback", "wren", PASSWORD)
    assert page.inner_text("#modes-how").startswith(BLURB + " Full runs the whole duration;")
    assert page.inner_text("#footer-how") == (
        "Achievable TCP throughput, after Tirumala, Cottrell and Dunigan (PAM 2003). " + BLURB
    )
    assert not any(old in _text(page) for old in OLD_WORDINGS)
    watched_page.assert_clean()


def test_permalink_of_a_fallback_on_loopback_says_what_held_it_and_saved_nothing(watched_page, live_server):
    page = watched_page.page
    site = factories.make_site(name="Loopback iperf3", slug="loopback")  # host 127.0.0.1
    m = factories.make_done_measurement(
        site=site,
        vantage=factories.make_vantage(name="local"),
        until_converged=True,
        result=factories.sample_result_event(
            quick_bps=3e9,
            quick_answered=False,
            quick_converged=False,
            quick_held_by="varying",
            quick_window_s=0.04,
            cumulative_bps=2e9,
            full_bps=2e9,
            elapsed_s=10.02,
            time_saved_pct=-0.2,
            traffic_saved_pct=-0.2,
        ),
    )
    page.goto(f"{live_server.url}/m/{m.slug}/")
    assert page.inner_text("#quick-held") == (
        "Held open by: the rate changed level with the link full (on loopback: CPU load on the host), "
        "after 0.04 s of measuring."
    )
    assert page.inner_text("#time-saved") == "0.0 s of 10 s (0.0 %)"
    assert page.inner_text("#trace-caption").startswith("The dashed line marks the end of slow-start. " + BLURB)
    assert page.inner_text("#footer-how").endswith(BLURB)
    body = _text(page)
    assert "cross traffic" not in body and "-0.2" not in body
    assert not any(old in body for old in OLD_WORDINGS)

    page.goto(f"{live_server.url}/sites/loopback/?vantage=local")
    cell = page.locator("#measurements tbody tr td").nth(4)  # When, Vantage, Mode, Status, Throughput
    assert cell.inner_text() == "2.00 Gbit/s full run: not converged"
    assert page.inner_text("#path-quick-how") == BLURB
    assert not any(old in _text(page) for old in OLD_WORDINGS)
    watched_page.screenshot("permalink-fallback-loopback-wording")
    watched_page.assert_clean()
