"""With a real worker: its vantage is online while the worker heartbeats; once the worker is
killed the vantage goes offline within HEARTBEAT_VANTAGE_OFFLINE_S, a sweep skips it, and its queued
test fails as vantage_offline at the reaper's next pass."""

import time

import pytest

from portal.measure import reaper
from portal.measure.models import Measurement, Vantage
from portal.measure.vantages import is_online
from portal.sweeps import planning
from portal.sweeps.models import SweepCell
from tests import factories
from tests.e2e.conftest import celery_worker, start_worker  # noqa: F401

from .conftest import make_sweep

pytestmark = pytest.mark.e2e


def test_killed_worker_vantage_goes_offline_sweep_skips_queued_fails(celery_worker, settings):  # noqa: F811
    settings.HEARTBEAT_VANTAGE_OFFLINE_S = 2.0  # the worker heartbeats every 0.5 s (the fixture's setting)
    site = factories.make_site(slug="nowhere", port=9)  # never reached: the vantage goes offline first
    time.sleep(2.5)
    vantage = Vantage.objects.get(name=celery_worker.name)
    assert is_online(vantage), "a live worker's vantage must stay online past HEARTBEAT_VANTAGE_OFFLINE_S"
    celery_worker.kill()
    waiting = factories.make_measurement(site=site, vantage=vantage)  # as if its task were on the broker
    time.sleep(2.5)
    assert not is_online(Vantage.objects.get(pk=vantage.pk))
    run = planning.fire(make_sweep("after-kill").pk, trigger="command")
    assert list(SweepCell.objects.filter(run=run).values_list("skip_code", flat=True)) == ["vantage_offline"]
    assert reaper.reap()["vantage_offline"] == 1
    waiting.refresh_from_db()
    assert (waiting.status, waiting.failure_code) == ("failed", "vantage_offline")
    assert not Measurement.objects.filter(status="queued").exists()
