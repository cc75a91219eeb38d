"""A vantage is online only while its worker heartbeats: offline ones are not offered, and
their queued tests fail at once as vantage_offline instead of waiting an hour."""

import datetime

from django.utils import timezone

from portal.measure import reaper
from portal.measure.forms import MeasurementForm
from portal.measure.models import Measurement
from tests import factories


def _stale(settings, seconds_past=1):
    return timezone.now() - datetime.timedelta(seconds=settings.HEARTBEAT_VANTAGE_OFFLINE_S + seconds_past)


def test_form_offline_vantage_not_offered_and_refused(site, vantage, settings):
    settings.HEARTBEAT_VANTAGE_OFFLINE_S = 30
    factories.make_vantage(name="silent", last_seen=_stale(settings))
    form = MeasurementForm(data={"site": site.slug, "vantage": "silent"})
    assert [value for value, _ in form.fields["vantage"].widget.choices] == ["local"]
    assert form.errors == {
        "vantage": ["vantage 'silent' is offline (its worker is not heartbeating): choose one of local."]
    }


def test_form_no_vantage_online_says_so(site, vantage, settings):
    settings.HEARTBEAT_VANTAGE_OFFLINE_S = 30
    type(vantage).objects.filter(pk=vantage.pk).update(last_seen=_stale(settings))
    form = MeasurementForm(data={"site": site.slug})
    assert form.errors == {
        "vantage": ["no vantage is online: no prober host's worker is heartbeating, so no test can run right now."]
    }


def test_reaper_fails_queued_of_offline_vantage_at_once(site, vantage, settings):
    settings.HEARTBEAT_VANTAGE_OFFLINE_S = 30
    silent = factories.make_vantage(name="silent", last_seen=timezone.now() - datetime.timedelta(seconds=31))
    waiting = factories.make_measurement(site=site, vantage=silent)
    alive = factories.make_measurement(site=site, vantage=vantage)
    running = factories.make_measurement(site=site, vantage=silent, status="running", heartbeat_at=timezone.now())
    assert reaper.reap() == {"worker_lost": 0, "queued_too_long": 0, "vantage_offline": 1}
    waiting.refresh_from_db()
    assert (waiting.status, waiting.failure_code) == ("failed", "vantage_offline")
    assert waiting.failure_reason == (
        f"vantage silent is offline: no heartbeat from its worker since {silent.last_seen:%Y-%m-%d %H:%M:%S} UTC "
        "(more than 30 s); the test was not run."
    )
    assert Measurement.objects.get(pk=alive.pk).status == "queued"
    assert Measurement.objects.get(pk=running.pk).status == "running"  # the worker_lost rule's business


def test_reaper_disabled_vantage_queued_fail(site, settings):
    off = factories.make_vantage(name="off", enabled=False)
    waiting = factories.make_measurement(site=site, vantage=off)
    reaper.reap()
    waiting.refresh_from_db()
    assert (waiting.failure_code, waiting.failure_reason) == (
        "vantage_offline",
        "vantage off is disabled; the test was not run.",
    )
