"""Vantage presence, in one place: what this host offers as a vantage (its kernel and
congestion controls), its registration when its worker starts, every write of
Vantage.last_seen (at registration, periodically from the worker, and when a test starts),
and what counts as online: a worker heartbeat within HEARTBEAT_VANTAGE_OFFLINE_S."""

import logging
import os
import threading
from datetime import timedelta

from celery import bootsteps
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from .models import Measurement, Vantage
from .vocab import Status, vantage_queue

log = logging.getLogger(__name__)

CONGESTION_CONTROLS_PATH = "/proc/sys/net/ipv4/tcp_available_congestion_control"
# Without CAP_NET_ADMIN a socket may only pick from this subset (plus the default, which the
# kernel always lists here).
ALLOWED_CONGESTION_CONTROLS_PATH = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


def _read_words(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def _has_net_admin():
    CAP_NET_ADMIN = 12
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) & (1 << CAP_NET_ADMIN))
    except (OSError, ValueError):
        pass
    return os.geteuid() == 0


def available_congestion_controls():
    """The congestion controls the prober, running as this process's user, can set: offering
    one the kernel would refuse would only turn into a failed test."""
    available = _read_words(CONGESTION_CONTROLS_PATH)
    if _has_net_admin():
        return available
    allowed = set(_read_words(ALLOWED_CONGESTION_CONTROLS_PATH))
    return [name for name in available if name in allowed]


def register_vantage(name, description=None):
    """Creates or refreshes this host's Vantage; an admin's description and enabled flag stay."""
    defaults = {
        "kernel": os.uname().release,
        "congestion_controls": available_congestion_controls(),
        "last_seen": timezone.now(),
    }
    vantage, created = Vantage.objects.update_or_create(name=name, defaults=defaults)
    if created or (description and not vantage.description):
        vantage.description = description or f"prober host {os.uname().nodename}"
        vantage.save(update_fields=["description"])
    return vantage


def touch(vantage_id=None, name=None):
    """Marks the vantage as seen now (by pk or by name)."""
    rows = Vantage.objects.filter(pk=vantage_id) if vantage_id is not None else Vantage.objects.filter(name=name)
    rows.update(last_seen=timezone.now())


class VantageBusy(Exception):
    """The vantage already runs its max_concurrent_tests: the test waits for its turn."""


def hold_slot(measurement_id):
    """Inside the claim's transaction: locks the measurement's vantage row, so two claims from
    one vantage take turns, and raises VantageBusy if it already runs max_concurrent_tests.
    The worker's pool is that size (portal/launch.py); this holds the bound even for a second
    worker on the same queue or a setting lowered before the worker restarted."""
    # FOR NO KEY UPDATE, not FOR UPDATE: a request inserting a measurement holds its site's row
    # and takes FOR KEY SHARE on the vantage's (the foreign key check), which FOR UPDATE would
    # block while this claim waits for that site row (its version bump): a deadlock.
    row = (
        Vantage.objects.select_for_update(no_key=True, of=("self",))
        .filter(measurements=measurement_id, measurements__status=Status.QUEUED)
        .values_list("pk", "max_concurrent_tests")
        .first()
    )
    if row is None:  # not queued (a task delivered twice, a finished row) or gone: the claim finds nothing
        return
    vantage_id, limit = row
    running = Measurement.objects.filter(vantage_id=vantage_id, status=Status.RUNNING).count()
    if running >= limit:
        raise VantageBusy(f"vantage busy: {running} of its {limit} concurrent tests running")


def online_since(now=None):
    """A vantage is online while its last heartbeat is at or after this moment."""
    return (now or timezone.now()) - timedelta(seconds=settings.HEARTBEAT_VANTAGE_OFFLINE_S)


def online(queryset=None, now=None):
    """The enabled vantages whose worker heartbeats: the only ones offered for new tests (form,
    API, sweeps)."""
    rows = Vantage.objects.all() if queryset is None else queryset
    return rows.filter(enabled=True, last_seen__gte=online_since(now))


def is_online(vantage, now=None):
    return bool(vantage.enabled and vantage.last_seen is not None and vantage.last_seen >= online_since(now))


def offline_reason(vantage, now=None):
    """Why a vantage is not offered, in words for a failure reason or a form error."""
    if not vantage.enabled:
        return f"vantage {vantage.name} is disabled"
    if vantage.last_seen is None:
        return f"vantage {vantage.name} is offline: its worker has never been seen"
    return (
        f"vantage {vantage.name} is offline: no heartbeat from its worker since "
        f"{vantage.last_seen:%Y-%m-%d %H:%M:%S} UTC (more than {settings.HEARTBEAT_VANTAGE_OFFLINE_S:g} s)"
    )


def own_vantage(worker_app):
    """This host's vantage name if this worker consumes its queue, else None."""
    queues = set(worker_app.amqp.queues.consume_from or ())
    name = settings.VANTAGE_NAME
    return name if vantage_queue(name) in queues else None


def _refresh(name):
    try:
        close_old_connections()
        touch(name=name)
    except Exception:  # a database hiccup must not take the worker down; the next tick retries
        log.exception("could not refresh vantage %s", name)


def _refresh_every(name, stopping):
    while not stopping.wait(settings.HEARTBEAT_VANTAGE_S):
        _refresh(name)


class VantagePresence(bootsteps.StartStopStep):
    """A worker that consumes a vantage queue registers the host it runs on, then refreshes its
    last_seen every HEARTBEAT_VANTAGE_S, so pages can tell a live vantage from one whose worker
    is gone even when no test is asked of it. Added to the worker in portal/celery.py."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        super().__init__(worker, **kwargs)
        self.stopping = None

    def start(self, worker):
        name = own_vantage(worker.app)
        if name:
            try:
                register_vantage(name)
            except Exception:  # the periodic refresh retries; a worker without a database still drains
                log.exception("could not register vantage %s", name)
            # A thread, not the worker's timer: the timer runs on the event loop, which stands still
            # while the consumer reconnects to a broker that is down, and a live vantage would then
            # look offline and have its queued tests failed (tests/faults/test_redis_faults.py).
            self.stopping = threading.Event()
            threading.Thread(
                target=_refresh_every, args=(name, self.stopping), daemon=True, name="vantage-presence"
            ).start()

    def stop(self, worker):
        if self.stopping is not None:
            self.stopping.set()
            self.stopping = None
