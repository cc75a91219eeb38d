"""Issue 24 item 8: the quick answer as it is (answered by a deadline, asymmetric interval, what
bounded it), stored from the prober's `result` event and shown on the permalink; older rows stay
valid; "measure until converged" reaches the prober; "measure longer" queues the linked full run."""

import pytest
from django.test import Client

from portal.measure import runner
from portal.measure.models import Measurement, Quota
from portal.measure.paths import headline_expr
from tests import factories
from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)

pytestmark = pytest.mark.django_db

LEVELS_TEXT = "the rate changed level while the link was full (cross traffic?): the interval spans the levels seen"


def _deadline_event(**overrides):
    """An answer at the deadline (contract-24): answered, not converged, a wide asymmetric interval."""
    fields = dict(
        quick_bps=612e6,
        quick_answered=True,
        quick_converged=False,
        quick_lo_bps=500e6,
        quick_hi_bps=640e6,
        quick_ci_pct=18.3,
        quick_bound_by="levels",
        quick_bound_text=LEVELS_TEXT,
        quick_window_s=4.0,
        cumulative_bps=598e6,
        full_bps=None,
        elapsed_s=2.9,
    )
    fields.update(overrides)
    return factories.sample_result_event(**fields)


def _done(site, vantage, event, **overrides):
    return factories.make_done_measurement(site=site, vantage=vantage, result=event, **overrides)


# --- storing -----------------------------------------------------------------------------------


def test_result_event_new_fields_stored_exactly(site, vantage):
    m = factories.make_measurement(site=site, vantage=vantage, status="running")
    event = _deadline_event()
    assert runner.store_result(m.pk, event, factories.sample_trace_dict()) is True
    m = Measurement.objects.get(pk=m.pk)
    assert (m.quick_answered, m.quick_converged) == (True, False)
    assert (m.quick_lo_bps, m.quick_bps, m.quick_hi_bps, m.quick_ci_pct) == (500e6, 612e6, 640e6, 18.3)
    assert (m.quick_bound_by, m.quick_bound_text) == ("levels", LEVELS_TEXT)
    assert m.full_bps is None and m.result == event
    # An answer at the deadline IS the result: the headline and its error bar.
    assert (m.headline_bps, m.shows_error_bar, m.quick_fell_back) == (612e6, True, False)
    assert m.quick_interval == (500e6, 640e6)
    assert round(m.quick_half_width_pct, 4) == round(100 * 112 / 612, 4)


def test_result_event_long_bound_text_cut_to_column_whole_in_result(site, vantage):
    m = factories.make_measurement(site=site, vantage=vantage, status="running")
    text = "x" * 299 + "yz" + "w" * 99
    assert runner.store_result(m.pk, _deadline_event(quick_bound_text=text), factories.sample_trace_dict())
    m = Measurement.objects.get(pk=m.pk)
    assert m.status == "done"
    assert m.quick_bound_text == "x" * 299 + "y"
    assert m.result["quick_bound_text"] == text


def test_result_event_fallback_stored_as_not_answered(site, vantage):
    m = _done(
        site,
        vantage,
        _deadline_event(
            quick_answered=False, quick_converged=False, full_bps=142e6, cumulative_bps=142e6, elapsed_s=10.0
        ),
    )
    assert (m.quick_answered, m.headline_bps, m.shows_error_bar, m.quick_fell_back) == (False, 142e6, False, True)
    assert m.offers_longer is False


def test_old_row_without_new_keys_reads_converged_and_ci_pct(site, vantage):
    # sample_result_event has none of issue 24's keys, as rows stored before it.
    old = _done(site, vantage, factories.sample_result_event(quick_bps=612e6, quick_ci_pct=2.1, quick_converged=True))
    assert (old.quick_answered, old.quick_lo_bps, old.quick_hi_bps, old.quick_bound_by, old.quick_bound_text) == (
        None,
        None,
        None,
        "",
        "",
    )
    assert old.quick_answer_taken is True and old.headline_bps == 612e6 and old.shows_error_bar
    lo, hi = old.quick_interval
    assert (round(lo), round(hi)) == (599_148_000, 624_852_000)
    assert old.quick_interval_wide is False and old.offers_longer is True
    fell_back = _done(
        site,
        vantage,
        factories.sample_result_event(
            quick_bps=90e6, quick_ci_pct=14.0, quick_converged=False, cumulative_bps=142e6, full_bps=142e6
        ),
    )
    assert (fell_back.headline_bps, fell_back.quick_fell_back, fell_back.shows_error_bar) == (142e6, True, False)
    older = _done(site, vantage, factories.sample_result_event(quick_bps=9.3e9))  # no error bar at all
    assert (older.quick_interval, older.quick_half_width_pct, older.headline_bps) == (None, None, 9.3e9)


def test_headline_sql_agrees_with_model_for_new_and_old_rows(site, vantage):
    rows = [
        _done(site, vantage, _deadline_event()),  # answered at the deadline: quick 612e6
        _done(site, vantage, _deadline_event(quick_answered=False, cumulative_bps=142e6)),  # fell back
        _done(site, vantage, factories.sample_result_event(quick_converged=True)),  # old, converged
        _done(site, vantage, factories.sample_result_event(quick_converged=False)),  # old, fell back
        _done(site, vantage, factories.sample_result_event()),  # oldest: neither field
    ]
    sql = dict(Measurement.objects.annotate(h=headline_expr()).values_list("pk", "h"))
    assert [sql[m.pk] for m in rows] == [612e6, 142e6, 9.3e9, 8.1e9, 9.3e9]
    assert [m.headline_bps for m in rows] == [612e6, 142e6, 9.3e9, 8.1e9, 9.3e9]


# --- the permalink's answer line --------------------------------------------------------------


def _answer_html(client, m):
    html = client.get(f"/m/{m.slug}/").content.decode()
    start = html.index('<p class="answer" id="quick-answer">')
    return html, html[start : html.index("</p>", start) + 4]


def test_permalink_deadline_answer_wide_interval_says_so_and_why(client, site, vantage):
    m = _done(site, vantage, _deadline_event())
    html, answer = _answer_html(client, m)
    assert answer == (
        '<p class="answer" id="quick-answer">612.0 Mbit/s (95 %: 500.0–640.0), answered in 2.90 s (at its deadline).</p>'
    )
    # Issue 27: the site is loopback (127.0.0.1): no cross traffic shares the path, so the
    # prober's "(cross traffic?)" guess gives way to what moves the rate there.
    assert (
        '<p class="answer-wide" id="quick-wide">The interval is wide: up to 18.3 % from the figure. Why: the rate '
        "changed level while the link was full (on loopback: CPU load on the host): the interval spans the "
        "levels seen. A full 10 s run measures it more closely.</p>"
    ) in html
    assert "cross traffic" not in html
    assert '<span class="figure" id="headline">612.0 Mbit/s ± 18.3 %</span>' in html
    assert "not the result" not in html and "did not converge" not in html


def test_permalink_converged_shows_interval_no_wide_sentence(client, site, vantage):
    m = _done(
        site,
        vantage,
        _deadline_event(quick_converged=True, quick_lo_bps=600e6, quick_hi_bps=624e6, quick_ci_pct=2.0, elapsed_s=1.8),
    )
    html, answer = _answer_html(client, m)
    assert answer == (
        '<p class="answer" id="quick-answer">612.0 Mbit/s (95 %: 600.0–624.0), answered in 1.80 s (converged).</p>'
    )
    assert 'id="quick-wide"' not in html


def test_permalink_interval_in_the_figures_unit(client, site, vantage):
    m = _done(site, vantage, _deadline_event(quick_bps=9.3e9, quick_lo_bps=9.1e9, quick_hi_bps=9.35e9))
    assert _answer_html(client, m)[1] == (
        '<p class="answer" id="quick-answer">9.30 Gbit/s (95 %: 9.10–9.35), answered in 2.90 s (at its deadline).</p>'
    )


def test_permalink_wide_without_bound_text_names_the_code(client, site, vantage):
    m = _done(site, vantage, _deadline_event(quick_bound_text=None, quick_bound_by="short"))
    assert "Why: bounded by short. A full 10 s run" in client.get(f"/m/{m.slug}/").content.decode()


def test_permalink_fallback_says_full_run_is_the_result(client, site, vantage):
    m = _done(
        site,
        vantage,
        _deadline_event(quick_answered=False, cumulative_bps=142e6, full_bps=142e6, elapsed_s=10.0),
        until_converged=True,
    )
    html, answer = _answer_html(client, m)
    assert answer == (
        '<p class="answer" id="quick-answer">Quick mode did not converge by its deadline and was asked to measure '
        "until converged: the result is the full run's average, 142.0 Mbit/s over 10.00 s. "
        '<span id="quick-held">Its window stayed open, after 4.00 s of measuring.</span></p>'
    )
    assert 'id="quick-wide"' not in html
    assert "quick mode did not converge: the full run's average" in html


def test_permalink_old_row_interval_from_ci_pct(client, site, vantage):
    m = _done(
        site,
        vantage,
        factories.sample_result_event(quick_bps=612e6, quick_ci_pct=2.1, quick_converged=True, elapsed_s=1.8),
    )
    assert _answer_html(client, m)[1] == (
        '<p class="answer" id="quick-answer">612.0 Mbit/s (95 %: 599.1–624.9), answered in 1.80 s (converged).</p>'
    )


def test_permalink_full_run_has_no_quick_answer_line(client, site, vantage):
    m = _done(site, vantage, factories.sample_result_event(quick_mode_entered=False), mode="full")
    assert 'id="quick-answer"' not in client.get(f"/m/{m.slug}/").content.decode()


# --- measure longer ---------------------------------------------------------------------------


@pytest.fixture
def quick(site, vantage, user):
    return _done(
        site,
        vantage,
        _deadline_event(),
        requested_by=user,
        duration_s=20,
        streams=4,
        window_bytes=262144,
        congestion="cubic",
    )


def _logged_in(user):
    c = Client()
    c.force_login(user)
    return c


def test_measure_longer_owner_queues_linked_full_run_same_parameters(quick, user):
    owner = _logged_in(user)
    response = owner.post(f"/m/{quick.slug}/longer")
    longer = Measurement.objects.get(longer_of=quick)
    assert response.status_code == 302 and response["Location"] == f"/m/{longer.slug}/"
    assert (
        longer.mode,
        longer.site,
        longer.vantage,
        longer.duration_s,
        longer.streams,
        longer.window_bytes,
        longer.congestion,
        longer.requested_by,
        longer.status,
        longer.until_converged,
    ) == ("full", quick.site, quick.vantage, 20, 4, 262144, "cubic", user, "queued", False)
    assert runner.prober_command(longer)[1:] == [
        "-c",
        "127.0.0.1",
        "-p",
        "5201",
        "-t",
        "20",
        "-P",
        "4",
        "--mode",
        "full",
        "--json",
        "-w",
        "256K",
        "-C",
        "cubic",
    ]
    # Linked both ways.
    new_html = owner.get(f"/m/{longer.slug}/").content.decode()
    assert (
        f'<p class="answer" id="longer-of">The full run of <a href="/m/{quick.slug}/">quick test {quick.slug}</a>, '
        "measured longer with the same parameters.</p>"
    ) in new_html
    quick_html = owner.get(f"/m/{quick.slug}/").content.decode()
    assert (
        f'<p class="answer" id="longer-run">Measured longer: <a href="/m/{longer.slug}/">its full run {longer.slug}</a> '
        "(queued).</p>"
    ) in quick_html
    # Queued once: the button is gone and a second POST returns the same run.
    assert 'id="measure-longer"' not in quick_html
    again = owner.post(f"/m/{quick.slug}/longer")
    assert again["Location"] == f"/m/{longer.slug}/"
    assert Measurement.objects.filter(longer_of=quick).count() == 1


def test_measure_longer_after_failed_full_run_queues_another(quick, user):
    owner = _logged_in(user)
    owner.post(f"/m/{quick.slug}/longer")
    Measurement.objects.filter(longer_of=quick).update(status="failed", failure_code="site_busy")
    assert 'id="measure-longer"' in owner.get(f"/m/{quick.slug}/").content.decode()
    owner.post(f"/m/{quick.slug}/longer")
    assert sorted(Measurement.objects.filter(longer_of=quick).values_list("status", flat=True)) == ["failed", "queued"]


def test_measure_longer_staff_may(quick):
    staff = factories.make_user(is_staff=True)
    response = _logged_in(staff).post(f"/m/{quick.slug}/longer")
    assert response.status_code == 302
    assert Measurement.objects.get(longer_of=quick).requested_by == staff


def test_measure_longer_other_user_404_nothing_queued(quick, other_user):
    other = _logged_in(other_user)
    assert 'id="measure-longer"' not in other.get(f"/m/{quick.slug}/").content.decode()
    response = other.post(f"/m/{quick.slug}/longer")
    assert response.status_code == 404
    assert "only its requester and staff can act on it" in response.content.decode()
    assert not Measurement.objects.filter(longer_of=quick).exists()


def test_measure_longer_anonymous_redirected_to_login(client, quick):
    assert 'id="measure-longer"' not in client.get(f"/m/{quick.slug}/").content.decode()
    response = client.post(f"/m/{quick.slug}/longer")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/m/{quick.slug}/longer"
    assert not Measurement.objects.filter(longer_of=quick).exists()


def test_measure_longer_get_refused_and_csrf_required(quick, user):
    assert _logged_in(user).get(f"/m/{quick.slug}/longer").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post(f"/m/{quick.slug}/longer").status_code == 403
    html = strict.get(f"/m/{quick.slug}/").content.decode()
    assert f'<form method="post" action="/m/{quick.slug}/longer" class="inline">' in html
    token = html.split('name="csrfmiddlewaretoken" value="')[-1].split('"')[0]
    assert strict.post(f"/m/{quick.slug}/longer", {"csrfmiddlewaretoken": token}).status_code == 302
    assert Measurement.objects.filter(longer_of=quick).count() == 1


def test_measure_longer_refused_for_a_run_that_already_went_to_t(site, vantage, user):
    fell_back = _done(site, vantage, _deadline_event(quick_answered=False), requested_by=user)
    full = _done(site, vantage, factories.sample_result_event(quick_mode_entered=False), mode="full", requested_by=user)
    owner = _logged_in(user)
    for m in (fell_back, full):
        assert 'id="measure-longer"' not in owner.get(f"/m/{m.slug}/").content.decode()
        response = owner.post(f"/m/{m.slug}/longer")
        assert response.status_code == 400
        assert f"Measurement {m.slug} cannot be measured longer" in response.content.decode()
    assert not Measurement.objects.filter(longer_of__isnull=False).exists()


def test_measure_longer_over_quota_429(quick, user):
    Quota.objects.create(user=user, tests_per_hour=1)  # the quick test itself used the hour's one
    response = _logged_in(user).post(f"/m/{quick.slug}/longer")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "You have requested 1 tests in the last hour" in response.content.decode()
    assert not Measurement.objects.filter(longer_of=quick).exists()


def test_measure_longer_vantage_offline_says_why(quick, user, vantage):
    vantage.last_seen = None
    vantage.save()
    response = _logged_in(user).post(f"/m/{quick.slug}/longer")
    assert response.status_code == 400
    assert "The full run cannot be queued: vantage &#x27;local&#x27; is offline" in response.content.decode()


# --- until converged: form, API, runner ------------------------------------------------------


def test_runner_passes_until_converged_only_when_asked_in_quick_mode(site, vantage):
    asked = factories.make_measurement(site=site, vantage=vantage, until_converged=True)
    assert runner.prober_command(asked)[-1] == "--until-converged"
    assert runner.prober_command(asked).count("--until-converged") == 1
    default = factories.make_measurement(site=site, vantage=vantage)
    assert "--until-converged" not in runner.prober_command(default)
    full = factories.make_measurement(site=site, vantage=vantage, mode="full", until_converged=True)
    assert "--until-converged" not in runner.prober_command(full)


def test_form_page_checkbox_sets_until_converged(user, site, vantage):
    owner = _logged_in(user)
    page = owner.get("/measure/new").content.decode()
    assert '<input type="checkbox" name="until_converged"' in page
    assert "Measure until converged (may run the full -t)" in page
    response = owner.post("/measure/new", {"site": "loopback", "until_converged": "on"})
    assert response.status_code == 302
    assert Measurement.objects.get().until_converged is True
    owner.post("/measure/new", {"site": "loopback"})
    assert list(Measurement.objects.order_by("created_at").values_list("until_converged", flat=True)) == [True, False]


@pytest.mark.parametrize("value,stored", [(True, True), (False, False), ("true", True), ("0", False)])
def test_api_until_converged_boolean(api_client, site, vantage, value, stored):
    response = api_client.post(
        "/api/v1/measurements", {"site": "loopback", "until_converged": value}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    m = Measurement.objects.get(slug=response.json()["id"])
    assert m.until_converged is stored
    assert api_client.get(f"/api/v1/measurements/{m.slug}").json()["until_converged"] is stored


@pytest.mark.parametrize(
    "value,message",
    [
        (
            "maybe",
            "until_converged 'maybe' is not a boolean: give true or false (or leave it out: quick mode answers at its deadline).",
        ),
        ([True], "until_converged must be true or false."),
    ],
)
def test_api_until_converged_bad_value_refused(api_client, site, vantage, value, message):
    response = api_client.post(
        "/api/v1/measurements", {"site": "loopback", "until_converged": value}, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {"errors": {"until_converged": [message]}}
    assert not Measurement.objects.exists()


# --- issue 27: a fallback says what held it, for how long, in words that fit the path ---------


@pytest.mark.parametrize(
    "host,held",
    [
        ("127.0.0.1", "the rate changed level with the link full (on loopback: CPU load on the host)"),
        ("::1", "the rate changed level with the link full (on loopback: CPU load on the host)"),
        ("localhost", "the rate changed level with the link full (on loopback: CPU load on the host)"),
        ("iperf.example.net", "the rate changed level with the link full (cross traffic?)"),
    ],
)
def test_permalink_fallback_says_what_held_it_in_words_for_the_path(client, vantage, host, held):
    site = factories.make_site(name="Somewhere", slug="somewhere", host=host)
    event = _deadline_event(
        quick_answered=False,
        quick_held_by="varying",
        quick_window_s=3.25,
        quick_bound_text=LEVELS_TEXT,
        cumulative_bps=142e6,
        full_bps=142e6,
        elapsed_s=10.0,
    )
    m = _done(site, vantage, event, until_converged=True)
    html, answer = _answer_html(client, m)
    assert answer.endswith(f'<span id="quick-held">Held open by: {held}, after 3.25 s of measuring.</span></p>')
    assert ("cross traffic" in html) is (host == "iperf.example.net")
    assert m.quick_bound_words == (
        LEVELS_TEXT
        if host == "iperf.example.net"
        else "the rate changed level while the link was full (on loopback: CPU load on the host): "
        "the interval spans the levels seen"
    )
