"""Sweeps: one measurement of every enabled site from every enabled vantage, like the regular
IEPM-BW runs that fill the site history pages. Requested by nobody (requested_by is null)."""
import logging

from .models import Measurement, Site, Vantage
from .services import request_measurement
from .vocab import UNFINISHED_STATUSES

log = logging.getLogger(__name__)


def sweep(mode="quick", duration_s=10, streams=1, sites=None, vantages=None):
    """Queues the sweep's measurements and returns them. A (site, vantage) pair that still has
    a queued or running measurement is skipped: a sweep that outpaces the tests must not pile
    up a backlog behind the one-test-per-site rule."""
    site_qs = Site.objects.filter(enabled=True)
    vantage_qs = Vantage.objects.filter(enabled=True)
    if sites:
        site_qs = site_qs.filter(slug__in=sites)
    if vantages:
        vantage_qs = vantage_qs.filter(name__in=vantages)
    pending = set(Measurement.objects.filter(status__in=UNFINISHED_STATUSES).values_list("site_id", "vantage_id"))
    queued = []
    for vantage in vantage_qs.order_by("name"):
        for site in site_qs.order_by("slug"):
            if (site.pk, vantage.pk) in pending:
                log.info("sweep: %s from %s still pending; skipped", site.slug, vantage.name)
                continue
            queued.append(request_measurement({"site": site.slug, "vantage": vantage.name, "mode": mode,
                                               "duration_s": str(duration_s), "streams": str(streams)}, None))
    return queued
