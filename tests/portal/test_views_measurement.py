import json
import re

import pytest
from django.test import Client

from portal.measure import progress
from tests import factories
from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)


def _clients(user, other_user):
    anonymous = Client()
    owner = Client()
    owner.force_login(user)
    other = Client()
    other.force_login(other_user)
    return {"anonymous": anonymous, "owner": owner, "other": other}


@pytest.mark.parametrize("who", ["anonymous", "owner", "other"])
def test_permalink_done_readable_by_everyone(who, done_measurement, user, other_user):
    response = _clients(user, other_user)[who].get(f"/m/{done_measurement.slug}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<span class="figure" id="headline">9.30 Gbit/s</span>' in html
    assert "quick-mode estimate" in html


def test_permalink_done_has_opengraph_tags(client, done_measurement):
    html = client.get(f"/m/{done_measurement.slug}/").content.decode()
    assert '<meta property="og:title" content="9.30 Gbit/s to Loopback iperf3">' in html
    assert f'<meta property="og:url" content="http://testserver/m/{done_measurement.slug}/">' in html
    assert (
        '<meta property="og:description" content="Quick-mode TCP throughput from local to Loopback iperf3 '
        "(127.0.0.1): slow-start ended at 0.84 s (paper_cwnd_stable), measured in 1.86 s instead of 10 s. "
        'RTT 45 µs, 0 retransmits.">'
    ) in html


def test_permalink_done_shows_results(client, done_measurement):
    html = client.get(f"/m/{done_measurement.slug}/").content.decode()
    assert "<dt>Cumulative (iperf's figure)</dt><dd>8.10 Gbit/s</dd>" in html
    assert "<dt>Slow-start end</dt><dd>0.84 s (paper_cwnd_stable)</dd>" in html
    # Issue 27: saved against a run of the test's own -t (10 s at 9.3 Gbit/s: 11.625e9 bytes), in
    # the one wording of the path and sweep pages: 10 - 1.86 s; 11.625e9 - 1234567890 bytes.
    assert 'Time saved</dt><dd id="time-saved">8.1 s of 10 s (81.4 %)</dd>' in html
    assert 'Traffic saved</dt><dd id="traffic-saved">9.68 GiB of 10.8 GiB (89.4 %)</dd>' in html
    assert "<dt>Window asked / given</dt><dd>default / 2.50 MiB</dd>" in html
    assert "<dt>RTT (smoothed / min)</dt><dd>45 µs / 12 µs</dd>" in html
    assert "<dt>Bytes sent / server got</dt><dd>1.15 GiB / 1.15 GiB</dd>" in html
    # Finished: no polling element, the trace is embedded for the charts.
    assert "hx-trigger" not in html
    trace = json.loads(html.split('<script id="trace-data" type="application/json">')[1].split("</script>")[0])
    # ...with the quick window the charts shade (none here: the sample did not say it converged).
    assert trace == dict(factories.sample_trace_dict(), quick_window=None)
    assert f'href="/m/{done_measurement.slug}/trace.csv"' in html
    assert f'href="/m/{done_measurement.slug}/trace.json"' in html


def test_permalink_multi_stream_draws_per_stream_chart(client, site, vantage):
    m = factories.make_done_measurement(site=site, vantage=vantage, trace=factories.sample_trace_dict(streams=(1, 3)))
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert '<canvas id="chart-streams" role="img"' in html
    assert "Per-stream cwnd (2 streams)" in html


def test_permalink_single_stream_has_no_per_stream_chart(client, done_measurement):
    html = client.get(f"/m/{done_measurement.slug}/").content.decode()
    assert "chart-streams" not in html
    assert '<canvas id="chart-cwnd" role="img"' in html


def test_permalink_quick_not_entered_says_so(client, site, vantage):
    result = factories.sample_result_event(
        quick_mode_entered=False, quick_bps=None, cumulative_bps=4.2e8, slow_start_end_s=None, rule=None
    )
    m = factories.make_done_measurement(site=site, vantage=vantage, result=result)
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert '<span class="figure" id="headline">420.0 Mbit/s</span>' in html
    assert "quick mode not entered: whole-run average" in html
    assert "<dt>Slow-start end</dt><dd>never detected</dd>" in html


def test_permalink_full_run_does_not_claim_quick_mode_failed(client, site, vantage):
    result = factories.sample_result_event(
        mode="full", quick_mode_entered=False, quick_bps=None, cumulative_bps=4.2e8, full_bps=4.2e8
    )
    m = factories.make_done_measurement(site=site, vantage=vantage, mode="full", result=result)
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert "<dt>Quick estimate</dt><dd>– (full run: not asked for)</dd>" in html
    assert "quick mode not entered" not in html


DETAIL = "<p>connect to 127.0.0.1 port 5201: Connection refused</p>"


def _failed(site, vantage, user):
    return factories.make_measurement(
        site=site,
        vantage=vantage,
        status="failed",
        failure_code="connect_refused",
        failure_reason="connect to 127.0.0.1 port 5201: Connection refused",
        requested_by=user,
    )


def test_permalink_failed_anonymous_sees_code_and_short_reason_only(client, site, vantage, user):
    m = _failed(site, vantage, user)
    response = client.get(f"/m/{m.slug}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong><code>connect_refused</code></strong>: nothing listens on the site&#x27;s port</p>" in html
    assert DETAIL not in html and "127.0.0.1 port 5201" not in html
    assert '<meta property="og:title" content="Failed (connect_refused): test to Loopback iperf3">' in html
    assert '<meta property="og:description" content="nothing listens on the site&#x27;s port">' in html
    assert "trace.csv" not in html


def test_permalink_failed_owner_and_staff_see_the_detail(client, site, vantage, user, other_user):
    m = _failed(site, vantage, user)
    client.force_login(user)
    assert DETAIL in client.get(f"/m/{m.slug}/").content.decode()
    client.force_login(other_user)
    assert DETAIL not in client.get(f"/m/{m.slug}/").content.decode()
    other_user.is_staff = True
    other_user.save()
    assert DETAIL in client.get(f"/m/{m.slug}/").content.decode()


def test_permalink_unknown_slug_404(client, db):
    assert client.get("/m/doesnotexist/").status_code == 404


def test_permalink_running_polls_and_shows_phase(client, measurement):
    measurement.status = "running"
    measurement.save()
    samples = [{"t": 0.02, "inst_bps": 1e9, "cumu_bps": 5e8, "cwnd_bytes": 65483}]
    progress.write(measurement.pk, "slow_start", 0.02, samples)
    html = client.get(f"/m/{measurement.slug}/").content.decode()
    assert f'hx-get="/m/{measurement.slug}/" hx-trigger="every 500ms" hx-swap="outerHTML"' in html
    assert '<li class="past" data-phase="connecting">Connecting</li>' in html
    assert '<li class="current" data-phase="slow_start">Slow-start</li>' in html
    assert '<li class="future" data-phase="measuring">Measuring</li>' in html
    assert '<canvas id="chart-live"' in html
    # The full page has one status badge; the out-of-band copy is for polls only.
    assert html.count('id="status"') == 1
    assert '<meta property="og:title" content="Test to Loopback iperf3 (running)">' in html


def test_progress_partial_htmx_returns_only_partial(client, measurement):
    measurement.status = "running"
    measurement.save()
    samples = [{"t": 0.5, "inst_bps": 2e9, "cumu_bps": 1e9, "cwnd_bytes": 131072}]
    progress.write(measurement.pk, "full", 0.5, samples)
    response = client.get(f"/m/{measurement.slug}/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="progress"')
    assert "<html" not in html
    assert '<li class="current" data-phase="measuring">Full run</li>' in html
    assert '<span class="badge running" id="status" hx-swap-oob="true">running</span>' in html
    assert "0.50 s since the first byte" in html
    embedded = html.split('<script id="live-samples" type="application/json">')[1].split("</script>")[0]
    assert json.loads(embedded) == samples


@pytest.mark.parametrize(
    "mode,why",
    [
        (
            "quick",
            # Issue 27: quick mode answers by its deadline; it goes on only when asked to.
            "quick mode had not converged by its deadline and this test was asked to measure until converged, so it "
            "goes on for its whole duration and that run's average is the result",
        ),
        ("validate", "validate runs the whole duration, to compare quick mode's answer with it"),
        ("full", "a full run was asked for"),
    ],
)
def test_progress_full_run_says_why_and_when_it_ends(client, measurement, mode, why):
    measurement.status, measurement.mode = "running", mode
    measurement.save()  # duration_s 10
    progress.write(measurement.pk, "full", 6.5, [])
    html = client.get(f"/m/{measurement.slug}/", HTTP_HX_REQUEST="true").content.decode()
    assert (
        f'<p id="phase-why"><strong>Full run:</strong> {why}; ends at about 10 s (about 4 s from now).</p>'
    ) in html.replace("&#x27;", "'")


def test_progress_before_the_full_run_says_nothing_of_it(client, measurement):
    progress.write(measurement.pk, "measuring", 1.5, [])
    html = client.get(f"/m/{measurement.slug}/", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="phase-why"' not in html


def test_progress_partial_queued_without_worker_state(client, measurement):
    html = client.get(f"/m/{measurement.slug}/", HTTP_HX_REQUEST="true").content.decode()
    assert '<li class="current" data-phase="queued">Queued</li>' in html
    assert '<script id="live-samples" type="application/json">[]</script>' in html


@pytest.mark.parametrize("status", ["done", "failed"])
def test_progress_poll_finished_answers_286_and_refresh(client, measurement, status):
    measurement.status = status
    measurement.save()
    response = client.get(f"/m/{measurement.slug}/", HTTP_HX_REQUEST="true")
    assert response.status_code == 286
    assert response["HX-Refresh"] == "true"
    assert response.content == b""


def test_progress_poll_unknown_slug_404(client, db):
    assert client.get("/m/nope/", HTTP_HX_REQUEST="true").status_code == 404


@pytest.mark.parametrize("who", ["anonymous", "owner", "other"])
def test_trace_csv_exact_bytes(who, done_measurement, user, other_user):
    response = _clients(user, other_user)[who].get(f"/m/{done_measurement.slug}/trace.csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="quickprobe-{done_measurement.slug}-trace.csv"'
    body = b"".join(response.streaming_content).decode()
    assert body == (
        "t,inst_bps,cumu_bps,cwnd_bytes,s1_cwnd_bytes,s1_ssthresh_bytes,s1_rtt_us,s1_bytes_acked,s1_total_retrans\n"
        "0.02,1000000000.0,500000000.0,654830,654830,,40,1000000,0\n"
        "0.04,2000000000.0,1000000000.0,1309660,1309660,,41,2000000,0\n"
        "0.06,3000000000.0,1500000000.0,1964490,1964490,1309660,42,3000000,0\n"
        "0.08,4000000000.0,2000000000.0,2619320,2619320,1309660,43,4000000,0\n"
        "0.1,5000000000.0,2500000000.0,3274150,3274150,1309660,44,5000000,0\n"
    )


@pytest.mark.parametrize("who", ["anonymous", "owner", "other"])
def test_trace_json_equals_stored_trace(who, done_measurement, user, other_user):
    response = _clients(user, other_user)[who].get(f"/m/{done_measurement.slug}/trace.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == factories.sample_trace_dict()


@pytest.mark.parametrize("suffix", ["trace.csv", "trace.json"])
def test_trace_download_without_trace_404(client, measurement, suffix):
    response = client.get(f"/m/{measurement.slug}/{suffix}")
    assert response.status_code == 404


@pytest.mark.parametrize("suffix", ["trace.csv", "trace.json"])
def test_trace_download_unknown_slug_404(client, db, suffix):
    assert client.get(f"/m/nope/{suffix}").status_code == 404


def test_permalink_trace_read_once_per_site_version(client, done_measurement, django_assert_num_queries):
    first = client.get(f"/m/{done_measurement.slug}/").content
    # The measurement (with its site's version) only: the chart trace is the cached entry.
    with django_assert_num_queries(1):
        second = client.get(f"/m/{done_measurement.slug}/").content
    assert second == first
    factories.make_measurement(site=done_measurement.site, vantage=done_measurement.vantage)
    with django_assert_num_queries(2):  # a new version of the site: the trace is read again
        assert client.get(f"/m/{done_measurement.slug}/").content == first


def test_permalink_deleted_measurement_404_at_once(client, done_measurement):
    assert client.get(f"/m/{done_measurement.slug}/").status_code == 200
    done_measurement.delete()
    assert client.get(f"/m/{done_measurement.slug}/").status_code == 404


def test_permalink_failed_by_admin_shows_failure_at_once(client, measurement):
    from portal.measure.models import Measurement

    assert "in progress" in client.get(f"/m/{measurement.slug}/").content.decode()
    Measurement.objects.filter(pk=measurement.pk).update(status="failed", failure_code="cancelled")
    html = client.get(f"/m/{measurement.slug}/").content.decode()
    assert "<code>cancelled</code>" in html


def test_permalink_logged_in_page_not_shared_with_anonymous(client, done_measurement, user):
    client.force_login(user)
    assert "<span>alice</span>" in client.get(f"/m/{done_measurement.slug}/").content.decode()
    anonymous = Client().get(f"/m/{done_measurement.slug}/").content.decode()
    assert "alice" not in anonymous
    assert "Log in</a>" in anonymous


def test_permalink_running_never_cached(client, measurement):
    measurement.status = "running"
    measurement.save()
    progress.write(measurement.pk, "slow_start", 0.1, [])
    assert '<li class="current" data-phase="slow_start">' in client.get(f"/m/{measurement.slug}/").content.decode()
    progress.write(measurement.pk, "measuring", 0.9, [])
    assert '<li class="current" data-phase="measuring">' in client.get(f"/m/{measurement.slug}/").content.decode()


def test_progress_poll_ignores_stored_copy(client, measurement):
    measurement.status = "done"
    measurement.save()
    client.get(f"/m/{measurement.slug}/")
    assert client.get(f"/m/{measurement.slug}/", HTTP_HX_REQUEST="true").status_code == 286


def test_permalink_logged_in_trace_cached_too(client, user, done_measurement, django_assert_num_queries):
    client.force_login(user)
    first = client.get(f"/m/{done_measurement.slug}/").content.decode()
    # session, user, measurement: the trace is not loaded again
    with django_assert_num_queries(3):
        second = client.get(f"/m/{done_measurement.slug}/").content.decode()

    # (CSRF tokens, the header's and the owner's "measure longer" form's, are masked afresh on
    # every render.)
    def unmasked(html):
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html.split("<main>")[1])

    assert unmasked(second) == unmasked(first)
    assert '<script id="trace-data" type="application/json">' in second


def test_permalink_long_trace_thinned_for_charts_downloads_complete(client, site, vantage):
    big = factories.sample_trace_dict(n=3001, streams=(1, 3))
    m = factories.make_done_measurement(site=site, vantage=vantage, trace=big)
    html = client.get(f"/m/{m.slug}/").content.decode()
    embedded = json.loads(html.split('<script id="trace-data" type="application/json">')[1].split("</script>")[0])
    # 3001 samples over a 1500 limit: every 3rd, starting with the first.
    assert embedded["stride"] == 3
    assert embedded["t"] == big["t"][::3]
    assert len(embedded["t"]) == 1001
    assert embedded["streams"][1]["rtt_us"] == big["streams"][1]["rtt_us"][::3]
    assert embedded["streams"][1]["id"] == 3
    assert embedded["slow_start_end_s"] == big["slow_start_end_s"]
    assert "The charts show every 3rd sample; the downloads have all of them." in html
    assert json.loads(client.get(f"/m/{m.slug}/trace.json").content) == big


def test_not_found_page_says_what_was_missing(client, measurement):
    response = client.get(f"/m/{measurement.slug}/trace.json")
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Not found</h1>" in html
    assert f"Measurement {measurement.slug} has no stored trace (status: queued)." in html


def test_progress_status_read_again_when_worker_claimed_meanwhile(client, measurement, monkeypatch):
    from portal.measure import views
    from portal.measure.models import Measurement

    real_read = views.progress.read

    def read_after_claim(measurement_id):
        # The worker claims the row after the view loaded it, before it reads the progress.
        Measurement.objects.filter(pk=measurement_id).update(status="running")
        progress.write(measurement_id, "connecting", 0.0, [])
        return real_read(measurement_id)

    monkeypatch.setattr(views.progress, "read", read_after_claim)
    html = client.get(f"/m/{measurement.slug}/", HTTP_HX_REQUEST="true").content.decode()
    assert '<li class="current" data-phase="connecting">Connecting</li>' in html
    assert '<span class="badge running" id="status" hx-swap-oob="true">running</span>' in html


def test_pagecache_waits_for_a_concurrent_build(site):
    import threading

    from django.core.cache import cache

    from portal.measure import pagecache

    def never():
        raise AssertionError("built twice")

    cache.add(f"{pagecache.site_key(site, 'probe')}:building", 1, 5)  # another request is building the entry
    threading.Timer(0.2, lambda: cache.set(pagecache.site_key(site, "probe"), ("theirs",), 60)).start()
    assert pagecache.for_site(site, "probe", never) == "theirs"


def test_pagecache_builds_when_the_other_build_vanishes(site, monkeypatch):
    from django.core.cache import cache

    from portal.measure import pagecache

    monkeypatch.setattr(pagecache, "BUILD_WAIT_S", 0.2)
    cache.add(f"{pagecache.site_key(site, 'probe')}:building", 1, 60)  # its builder died and left the marker
    assert pagecache.for_site(site, "probe", lambda: "ours") == "ours"


def test_permalink_test_again_carries_its_settings(client, site, vantage):
    m = factories.make_done_measurement(
        site=site, vantage=vantage, mode="full", duration_s=7, streams=4, window_bytes=262144, congestion="cubic"
    )
    html = client.get(f"/m/{m.slug}/").content.decode()
    assert (
        '<a class="button secondary" id="test-again" href="/measure/new?site=loopback&amp;vantage=local&amp;mode=full'
        '&amp;duration_s=7&amp;streams=4&amp;window=262144&amp;congestion=cubic">Test this site again</a>'
    ) in html


@pytest.mark.parametrize(
    "fields,window",
    [
        ({"quick_converged": True, "quick_window_s": 1.2, "elapsed_s": 1.86}, [0.66, 1.86]),
        ({"quick_converged": True, "quick_window_s": 3.0, "elapsed_s": 2.5}, [0.0, 2.5]),
        ({"quick_converged": False, "quick_window_s": 5.0, "elapsed_s": 10.1}, None),  # went on to -t
        ({"quick_converged": None, "quick_window_s": None, "elapsed_s": 1.86}, None),  # older prober
        ({"mode": "validate", "quick_converged": True, "quick_window_s": 1.0, "elapsed_s": 10.0}, None),
    ],
)
def test_quick_window_shaded_only_when_it_ended_the_test(site, vantage, fields, window):
    from portal.measure.results import quick_window

    m = factories.make_done_measurement(site=site, vantage=vantage, **fields)
    assert quick_window(m) == window
