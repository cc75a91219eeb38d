"""The one cache in front of the read pages, fresh by construction.

Every site has a data version (Site.data_version). Any write of the site or of one of its
measurements through the ORM bumps it in the same transaction (models.MeasurementQuerySet,
Measurement.save/delete, Site.save; Vantage.save bumps every site). Whatever a page caches
about a site is stored under a key that holds that version, read in the same query as the
site itself. So a request that starts after a result is committed reads the new version and
can only find entries computed from data at least that new: there is nothing to invalidate,
no TTL to wait out, and anonymous and logged-in readers see the same data.

What is cached is page *data* (aggregates over a site's rows, chart points, a thinned trace),
never rendered HTML: pages are rendered per request for everyone, so a reader's name and CSRF
token never leak into a copy. Keys also hold the current hour, because some figures are over a
window that ends now (the last 7 or 90 days). Entries live in the Django cache (Redis when
REDIS_URL is set), which is best-effort (portal/cache.py): with Redis down every read is a
miss and pages are computed from PostgreSQL. TTL_S only frees memory; it is not a freshness
bound. Nothing else in the portal caches pages.
"""

import hashlib
import time

from django.core.cache import cache

from .models import Site

TTL_S = 6 * 3600
# Part of every key: bump it when the shape of a cached value changes, so a deployment never
# reads entries a previous release wrote under the same name.
FORMAT = 2
# The longest a request waits for another request's computation of the same entry (the
# slowest, a year of one site's aggregates, takes ~0.3 s).
BUILD_WAIT_S = 5.0
# Figures over a window ending now move slowly; an hour of drift is invisible on the pages.
TIME_BUCKET_S = 3600


def _get_or_build(key, build):
    hit = cache.get(key)
    if hit is not None:
        return hit[0]
    building = f"{key}:building"
    if not cache.add(building, 1, BUILD_WAIT_S):
        # Another request is computing this entry (a new version makes every reader miss at
        # once): wait for its result rather than run the same aggregates N times over. With
        # the cache unreachable the marker reads as absent and this request computes.
        deadline = time.monotonic() + BUILD_WAIT_S
        while cache.get(building) is not None and time.monotonic() < deadline:
            time.sleep(0.02)
            hit = cache.get(key)
            if hit is not None:
                return hit[0]
    value = build()
    # Wrapped, so a value of None is a hit too.
    cache.set(key, (value,), TTL_S)
    cache.delete(building)
    return value


def _identity(pk, created_at):
    # The creation time too: a database recreated behind a long-lived Redis reuses pks and
    # versions, never the creation instants.
    return f"{pk}.{created_at.timestamp():.6f}"


def _bucket():
    return int(time.time() // TIME_BUCKET_S)


def site_key(site, name, *params):
    """The cache key of one entry about `site` at its current data version."""
    variant = ":".join(map(str, params))
    identity = _identity(site.pk, site.created_at)
    return f"pagecache{FORMAT}:site:{identity}:v{site.data_version}:h{_bucket()}:{name}:{variant}"


def for_site(site, name, build, *params):
    """build() for this site, or its result cached under the site's current data version.
    site must be read in the request (its data_version is the key); params tell apart the
    variants of one page (page number, vantage, mode...) and must be short."""
    return _get_or_build(site_key(site, name, *params), build)


def for_all_sites(name, build):
    """build() for a page about every site (the overview), keyed on every site's version."""
    rows = Site.objects.order_by("pk").values_list("pk", "created_at", "data_version")
    versions = ",".join(f"{_identity(pk, created_at)}.{v}" for pk, created_at, v in rows)
    digest = hashlib.sha1(versions.encode()).hexdigest()
    return _get_or_build(f"pagecache{FORMAT}:sites:{digest}:h{_bucket()}:{name}", build)
