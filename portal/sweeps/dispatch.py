"""Where a sweep meets portal.measure's execution: which vantages are online, and queuing the
measurements a run planned. Both are measure's own functions; nothing here decides either."""
from django.db import transaction

from portal.measure import vantages as presence


def online_vantage_ids(vantages):
    """Primary keys of the given vantages whose worker is heartbeating."""
    return {v.pk for v in vantages if presence.is_online(v)}


def offline_reason(vantage):
    return presence.offline_reason(vantage)


def queue(measurements):
    """Sends each measurement's task once the planning transaction commits."""
    if not measurements:
        return
    from portal.measure.services import enqueue

    pending = list(measurements)
    transaction.on_commit(lambda: [enqueue(m) for m in pending])
