"""Where a sweep meets portal.measure's execution: which vantages are online, and queuing the
measurements a run planned. Both are measure's own functions; nothing here decides either."""

from portal.measure import dispatch as measure_dispatch
from portal.measure import vantages as presence


def online_vantage_ids(vantages):
    """Primary keys of the given vantages whose worker is heartbeating."""
    return {v.pk for v in vantages if presence.is_online(v)}


def offline_reason(vantage):
    return presence.offline_reason(vantage)


def queue(measurements):
    """Saves the planned (unsaved) measurements and sends their tasks once the planning
    transaction commits: measure's one enqueue path, in bulk."""
    if measurements:
        measure_dispatch.queue_measurements(measurements)
    return measurements
