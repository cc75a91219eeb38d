"""Where a sweep meets portal.measure's execution: which vantages are online, and queuing the
measurements a run planned. Both are measure's own functions; nothing here decides either."""
from django.conf import settings
from django.db import transaction
from django.utils import timezone


def online_vantage_ids(vantages):
    """Primary keys of the given vantages whose worker is heartbeating."""
    since = timezone.now() - timezone.timedelta(seconds=3 * settings.VANTAGE_HEARTBEAT_S)
    return {v.pk for v in vantages if v.last_seen is not None and v.last_seen >= since}


def queue(measurements):
    """Sends each measurement's task once the planning transaction commits."""
    if not measurements:
        return
    from portal.measure.services import enqueue

    pending = list(measurements)
    transaction.on_commit(lambda: [enqueue(m) for m in pending])
