"""The one way a measurement and its task come to exist (portal/measure/dispatch.py), and the
watchdog that finds rows whose task is gone (portal/measure/reaper.py), against a redis-server
of the test's own."""

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.measure import dispatch, reaper
from portal.measure.models import Measurement
from tests import factories

pytestmark = pytest.mark.faults


def queue_of(m):
    return f"vantage.{m.vantage.name}"


def waiting_ids(redis_server, m):
    return [json.loads(raw)["headers"]["id"] for raw in redis_server.client().lrange(queue_of(m), 0, -1)]


def make_queued(**fields):
    return dispatch.queue_measurement(site=factories.make_site(), vantage=factories.make_vantage(), **fields)


def test_queue_measurement_sends_after_commit_with_named_task(
    db, broker, redis_server, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        m = make_queued(mode="full", duration_s=3)
    assert waiting_ids(redis_server, m) == []  # nothing before the commit
    assert (m.status, m.dispatched_at, m.dispatch_count) == ("queued", None, 0)
    callbacks[0]()
    (task_id,) = waiting_ids(redis_server, m)
    assert task_id.startswith(f"m{m.pk}-")
    m.refresh_from_db()
    assert m.dispatched_at is not None and m.due_at <= m.dispatched_at


def test_send_with_broker_down_returns_quickly_and_leaves_row_unsent(
    db, broker, redis_server, django_capture_on_commit_callbacks
):
    redis_server.stop()
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        m = make_queued()
    assert time.monotonic() - started < 5
    m.refresh_from_db()
    assert (m.status, m.dispatched_at) == ("queued", None)


def test_watchdog_sends_unsent_rows_once_broker_is_back(db, broker, redis_server, settings):
    m = make_queued()  # on_commit never runs under `db`: as if the web process died after the commit
    assert reaper.watchdog() == {"sent": 0, "resent": 0, "task_lost": 0}  # not older than the grace yet
    later = timezone.now() + timedelta(seconds=settings.WATCHDOG_GRACE_S + 1)
    redis_server.stop()
    assert reaper.watchdog(later) == {"sent": 0, "resent": 0, "task_lost": 0}  # broker down: nothing judged
    redis_server.start()
    assert reaper.watchdog(later) == {"sent": 1, "resent": 0, "task_lost": 0}
    assert waiting_ids(redis_server, m)[0].startswith(f"m{m.pk}-")
    assert Measurement.objects.get(pk=m.pk).dispatched_at is not None


def test_watchdog_leaves_a_task_waiting_in_its_queue_alone(db, broker, redis_server, settings):
    m = make_queued()
    assert dispatch.send(m.pk, queue_of(m))
    later = timezone.now() + timedelta(seconds=settings.WATCHDOG_GRACE_S + 60)
    assert reaper.watchdog(later) == {"sent": 0, "resent": 0, "task_lost": 0}
    assert len(waiting_ids(redis_server, m)) == 1


def test_watchdog_leaves_a_retry_not_yet_due_alone(db, broker, redis_server, settings):
    m = make_queued()
    dispatch.retrying(m.pk, 60)  # a countdown retry a worker holds: not in the queue, due in 60 s
    soon = timezone.now() + timedelta(seconds=settings.WATCHDOG_GRACE_S)
    assert reaper.watchdog(soon) == {"sent": 0, "resent": 0, "task_lost": 0}


def test_watchdog_resends_a_lost_task_then_fails_it_task_lost(db, broker, redis_server, settings):
    settings.WATCHDOG_MAX_RESENDS = 2
    m = make_queued()
    dispatch.send(m.pk, queue_of(m))
    later = timezone.now()
    for resends in (1, 2):
        redis_server.client().delete(queue_of(m))  # lost: e.g. held by a worker that was killed
        later += timedelta(seconds=settings.WATCHDOG_GRACE_S + 1)  # the watchdog's clock; a resend is due then
        assert reaper.watchdog(later) == {"sent": 0, "resent": 1, "task_lost": 0}
        m.refresh_from_db()
        assert (m.status, m.dispatch_count) == ("queued", resends)
        assert len(waiting_ids(redis_server, m)) == 1
    redis_server.client().delete(queue_of(m))
    later += timedelta(seconds=settings.WATCHDOG_GRACE_S + 1)
    assert reaper.watchdog(later) == {"sent": 0, "resent": 0, "task_lost": 1}
    m.refresh_from_db()
    assert (m.status, m.failure_code) == ("failed", "task_lost")
    assert m.failure_reason == (
        f"task lost: its task was not on the broker {settings.WATCHDOG_GRACE_S:g} s after "
        "it was due, 3 times (broker restarts or workers killed); it was given up."
    )


def test_watchdog_ignores_running_and_finished_rows(db, broker, redis_server, settings):
    long_ago = timezone.now() - timedelta(hours=1)
    for status in ("running", "done", "failed"):
        factories.make_measurement(status=status, dispatched_at=long_ago, due_at=long_ago)
    later = timezone.now() + timedelta(seconds=settings.WATCHDOG_GRACE_S + 1)
    assert reaper.watchdog(later) == {"sent": 0, "resent": 0, "task_lost": 0}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"task": "measure.run", "id": "m42-abc", "argsrepr": "[42]"}, 42),
        ({"task": "measure.run", "id": "0b6f-uuid", "argsrepr": "(7,)"}, 7),
        ({"task": "measure.reap", "id": "m42-abc"}, None),
        ({"task": "measure.run", "id": "x", "argsrepr": "'x'"}, None),
    ],
)
def test_measurement_of_reads_task_id_or_args(headers, expected):
    assert reaper.measurement_of(json.dumps({"headers": headers})) == expected
    assert reaper.measurement_of(b"not json") is None


def test_watchdog_finds_a_task_sent_with_a_priority(db, broker, redis_server, settings):
    """A message at another priority step waits in a list of its own: still not lost."""
    m = make_queued()
    broker.send_task("measure.run", args=[m.pk], queue=queue_of(m), task_id=dispatch.task_id(m.pk), priority=9)
    Measurement.objects.filter(pk=m.pk).update(dispatched_at=timezone.now())
    assert waiting_ids(redis_server, m) == []  # not under the queue's own name
    later = timezone.now() + timedelta(seconds=settings.WATCHDOG_GRACE_S + 60)
    assert reaper.waiting_measurements({queue_of(m)}) == {m.pk}
    assert reaper.watchdog(later) == {"sent": 0, "resent": 0, "task_lost": 0}


@pytest.mark.parametrize("options", [{}, {"priority_steps": list(range(10)), "sep": ":"}])
def test_redis_lists_match_the_redis_transports_layout(options):
    # The product reads Celery's documented layout; this pins it to what kombu really does.
    from kombu.transport.redis import Channel

    channel = Channel.__new__(Channel)
    channel.priority_steps = options.get("priority_steps", Channel.priority_steps)
    channel.sep = options.get("sep", Channel.sep)
    assert reaper.redis_lists("vantage.x", options) == [
        channel._q_for_pri("vantage.x", step) for step in channel.priority_steps
    ]
