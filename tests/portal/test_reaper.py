import datetime

from django.utils import timezone

from portal.measure import reaper
from portal.measure.models import Measurement
from tests import factories


def test_reaper_fails_running_with_stale_heartbeat(site, vantage):
    now = timezone.now()
    lost = factories.make_measurement(
        site=site, vantage=vantage, status="running", started_at=now, heartbeat_at=now - datetime.timedelta(seconds=31)
    )
    assert reaper.reap(now=now, heartbeat_s=30) == {"worker_lost": 1, "queued_too_long": 0, "vantage_offline": 0}
    lost.refresh_from_db()
    assert (lost.status, lost.failure_code, lost.finished_at) == ("failed", "worker_lost", now)
    assert (
        lost.failure_reason == "worker lost: no heartbeat from the worker for more than 30 s; the test was abandoned."
    )


def test_reaper_keeps_running_with_fresh_heartbeat(site, vantage):
    now = timezone.now()
    alive = factories.make_measurement(
        site=site, vantage=vantage, status="running", started_at=now, heartbeat_at=now - datetime.timedelta(seconds=29)
    )
    assert reaper.reap(now=now, heartbeat_s=30) == {"worker_lost": 0, "queued_too_long": 0, "vantage_offline": 0}
    alive.refresh_from_db()
    assert alive.status == "running"


def test_reaper_fails_running_without_heartbeat_after_threshold(site, vantage):
    now = timezone.now()
    m = factories.make_measurement(
        site=site, vantage=vantage, status="running", started_at=now - datetime.timedelta(seconds=40), heartbeat_at=None
    )
    reaper.reap(now=now, heartbeat_s=30)
    assert Measurement.objects.get(pk=m.pk).failure_code == "worker_lost"


def test_reaper_fails_old_queued_keeps_recent(site, vantage):
    now = timezone.now()
    old = factories.make_measurement(site=site, vantage=vantage, created_at=now - datetime.timedelta(seconds=3601))
    recent = factories.make_measurement(site=site, vantage=vantage, created_at=now - datetime.timedelta(seconds=3599))
    assert reaper.reap(now=now, queued_s=3600) == {"worker_lost": 0, "queued_too_long": 1, "vantage_offline": 0}
    old.refresh_from_db()
    recent.refresh_from_db()
    assert (old.status, old.failure_code) == ("failed", "queued_too_long")
    assert old.failure_reason.startswith("not started within 3600 s")
    assert recent.status == "queued"


def test_reaper_leaves_finished_untouched(site, vantage):
    now = timezone.now()
    long_ago = now - datetime.timedelta(days=10)
    done = factories.make_done_measurement(site=site, vantage=vantage, created_at=long_ago, heartbeat_at=long_ago)
    reaper.reap(now=now)
    done.refresh_from_db()
    assert (done.status, done.failure_code, done.quick_bps) == ("done", "", 9.3e9)


def test_reaper_frees_site_for_next_claim(site, vantage):
    from portal.measure import runner

    now = timezone.now()
    factories.make_measurement(
        site=site, vantage=vantage, status="running", started_at=now, heartbeat_at=now - datetime.timedelta(seconds=60)
    )
    waiting = factories.make_measurement(site=site, vantage=vantage)
    reaper.reap(heartbeat_s=30)
    assert runner.claim(waiting.pk) is True


def test_reaper_old_queued_waits_while_its_vantage_works_through_its_queue(site, vantage, make_vantage):
    """One test at a time per vantage: a long sweep's last tests wait past REAPER_QUEUED_S
    for their turn; they fail only once their vantage stops starting tests."""
    now = timezone.now()
    waiting = factories.make_measurement(site=site, vantage=vantage, created_at=now - datetime.timedelta(hours=2))
    elsewhere = factories.make_site(slug="elsewhere")
    busy = factories.make_measurement(
        site=elsewhere, vantage=vantage, status="running", heartbeat_at=now - datetime.timedelta(seconds=5)
    )
    # Another vantage's work does not keep this one's rows waiting.
    idle = factories.make_measurement(
        site=site, vantage=make_vantage(name="idle"), created_at=now - datetime.timedelta(hours=2)
    )
    assert reaper.reap(now=now, queued_s=3600, heartbeat_s=30) == {
        "worker_lost": 0,
        "queued_too_long": 1,
        "vantage_offline": 0,
    }
    assert Measurement.objects.get(pk=waiting.pk).status == "queued"
    assert Measurement.objects.get(pk=idle.pk).failure_code == "queued_too_long"
    # The running test finished a minute ago and nothing started since: the queue stands still.
    Measurement.objects.filter(pk=busy.pk).update(status="done", heartbeat_at=now - datetime.timedelta(seconds=60))
    assert reaper.reap(now=now, queued_s=3600, heartbeat_s=30)["queued_too_long"] == 1
    assert Measurement.objects.get(pk=waiting.pk).failure_code == "queued_too_long"
