import pytest
from django.core.management import CommandError, call_command

from portal.measure.models import Measurement
from portal.measure.sweeps import sweep
from tests import factories


@pytest.fixture
def network(db):
    sites = [factories.make_site(slug=slug) for slug in ("a-site", "b-site")]
    factories.make_site(slug="off-site", enabled=False)
    vantages = [factories.make_vantage(name=name) for name in ("east", "west")]
    factories.make_vantage(name="retired", enabled=False)
    return sites, vantages


def test_sweep_every_enabled_site_from_every_enabled_vantage(network):
    queued = sweep(mode="quick", duration_s=5)
    assert [(m.site.slug, m.vantage.name) for m in queued] == [
        ("a-site", "east"), ("b-site", "east"), ("a-site", "west"), ("b-site", "west")]
    assert all((m.status, m.requested_by, m.mode, m.duration_s) == ("queued", None, "quick", 5) for m in queued)


def test_sweep_skips_pairs_still_pending(network):
    sites, vantages = network
    factories.make_measurement(site=sites[0], vantage=vantages[0], status="running")
    factories.make_measurement(site=sites[1], vantage=vantages[1])  # queued
    factories.make_done_measurement(site=sites[1], vantage=vantages[0])  # finished: no reason to skip
    queued = sweep()
    assert sorted((m.site.slug, m.vantage.name) for m in queued) == [("a-site", "west"), ("b-site", "east")]


def test_sweep_limited_to_named_sites_and_vantages(network):
    queued = sweep(sites=["b-site"], vantages=["west"])
    assert [(m.site.slug, m.vantage.name) for m in queued] == [("b-site", "west")]


def test_sweep_command_bad_duration_rejected_nothing_queued(network):
    with pytest.raises(CommandError, match=r"^duration_s 99 is out of range: allowed 1 to 60 seconds\.$"):
        call_command("sweep", "--duration", "99")
    assert Measurement.objects.count() == 0


def test_sweep_command_prints_queued(network, capsys):
    call_command("sweep", "--site", "a-site", "--mode", "full", "--duration", "3")
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "2 measurement(s) queued"
    assert Measurement.objects.filter(mode="full", duration_s=3, requested_by=None).count() == 2


def test_sweep_beat_entry_only_when_interval_set(monkeypatch):
    from django.conf import settings

    from portal import celery as celery_module

    monkeypatch.setattr(settings, "SWEEP_INTERVAL_S", 0.0)
    assert "sweep" not in celery_module.beat_schedule()
    monkeypatch.setattr(settings, "SWEEP_INTERVAL_S", 900.0)
    entry = celery_module.beat_schedule()["sweep"]
    assert (entry["task"], entry["schedule"], entry["kwargs"]) == ("measure.sweep", 900.0,
                                                                   {"mode": "quick", "duration_s": 10})
