"""Read-side queries for the sites overview and the site history page.

Everything here aggregates in the database and returns a bounded amount of data, whatever the
number of stored measurements: a site tested every few minutes for a year has 100,000 rows,
and its page must cost about what a page with ten rows costs. Traces are never read here.
The views cache what these return under the site's data version (pagecache.py); nothing here
caches.
"""

import datetime

from django.db import connection
from django.db.models import Aggregate, Avg, Case, Count, F, FloatField, Max, Min, OuterRef, Q, Subquery, When
from django.db.models.functions import ExtractHour
from django.utils import timezone

from .models import Measurement, Site
from .vocab import Mode, Status

# Points drawn on the throughput / RTT charts: the newest N finished measurements.
CHART_POINTS = 500
# The time-of-day profile describes the path as it is now: a median over a year would mix in
# route changes and upgrades (and sorting a year of rows per hour costs ~0.4 s at 100,000).
PROFILE_DAYS = 90
SETTINGS_ROWS = 12
TREND_RECENT_DAYS = 7
TREND_PRIOR_DAYS = 21


def headline_expr(prefix=""):
    """The SQL form of Measurement.headline_bps: the quick estimate if quick mode was entered,
    else what a plain iperf run reports."""
    # A quick estimate that was not the answer is never the headline: the run went on to -t and
    # its whole-run figure is the result (prober/EVENTS.md). quick_answered says so (issue 24);
    # rows from before it have it null and say it with quick_converged (null on older rows still).
    converged = Q(**{f"{prefix}quick_converged": True}) | Q(**{f"{prefix}quick_converged__isnull": True})
    answered = Q(**{f"{prefix}quick_answered": True}) | (Q(**{f"{prefix}quick_answered__isnull": True}) & converged)
    return Case(
        When(Q(**{f"{prefix}quick_mode_entered": True}) & answered, then=F(f"{prefix}quick_bps")),
        default=F(f"{prefix}cumulative_bps"),
        output_field=FloatField(),
    )


class Median(Aggregate):
    """percentile_cont(0.5) on PostgreSQL; other databases (SQLite in the embedded default)
    have no ordered-set aggregates, so they get the mean and the page says so."""

    function = "AVG"
    output_field = FloatField()

    def as_postgresql(self, compiler, conn, **extra):
        return self.as_sql(
            compiler, conn, template="percentile_cont(0.5) WITHIN GROUP (ORDER BY %(expressions)s)", **extra
        )


def profile_statistic():
    return "median" if connection.vendor == "postgresql" else "mean"


def _latest(site_ref, modes, value):
    qs = Measurement.objects.filter(site=site_ref, status=Status.DONE, mode__in=modes).order_by("-created_at")
    return {
        "bps": Subquery(qs.annotate(v=value).values("v")[:1], output_field=FloatField()),
        "at": Subquery(qs.values("finished_at")[:1]),
        "slug": Subquery(qs.values("slug")[:1]),
    }


def sites_overview(now=None):
    """Every enabled site with its latest quick and full results (one query: each figure is a
    correlated subquery that walks the (site, -created_at) index) and its 7-day trend."""
    quick = _latest(OuterRef("pk"), [Mode.QUICK], headline_expr())
    full = _latest(OuterRef("pk"), [Mode.FULL, Mode.VALIDATE], F("full_bps"))
    sites = list(
        Site.objects.filter(enabled=True)
        .annotate(
            last_quick_bps=quick["bps"],
            last_quick_at=quick["at"],
            last_quick_slug=quick["slug"],
            last_full_bps=full["bps"],
            last_full_at=full["at"],
            last_full_slug=full["slug"],
        )
        .order_by("name")
    )
    means = trend_means(now)
    for site in sites:
        site.trend = trend_pct(*means.get(site.pk, (None, None)))
    return sites


def trend_means(now=None):
    """{site pk: (mean of the last 7 days, mean of the 21 days before)}, for every site in one
    grouped query over four weeks of rows (~10 ms per busy site)."""
    now = now or timezone.now()
    recent_start = now - datetime.timedelta(days=TREND_RECENT_DAYS)
    prior_start = recent_start - datetime.timedelta(days=TREND_PRIOR_DAYS)
    rows = (
        Measurement.objects.filter(status=Status.DONE, created_at__gte=prior_start, created_at__lt=now)
        .values("site")
        .annotate(
            recent=Avg(headline_expr(), filter=Q(created_at__gte=recent_start)),
            prior=Avg(headline_expr(), filter=Q(created_at__lt=recent_start)),
        )
        .values_list("site", "recent", "prior")
    )
    return {site: (recent, prior) for site, recent, prior in rows}


def trend_pct(recent, prior):
    if recent is None or not prior:
        return None
    return 100.0 * (recent - prior) / prior


def site_summary(site, now=None):
    """Counts, the hour-of-day profile and the streams x window table: ~0.3 s at 100,000 rows,
    which is why the page caches it."""
    now = now or timezone.now()
    mine = Measurement.objects.filter(site=site)
    counts = mine.aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=Status.DONE)),
        failed=Count("pk", filter=Q(status=Status.FAILED)),
        first=Min("created_at"),
        last=Max("created_at"),
    )
    recent = mine.filter(status=Status.DONE, created_at__gte=now - datetime.timedelta(days=PROFILE_DAYS))
    by_hour = (
        recent.annotate(hour=ExtractHour("created_at"))
        .values("hour")
        .annotate(value=Median(headline_expr()), n=Count("pk"))
        .order_by("hour")
    )
    profile = [None] * 24
    counts_by_hour = [0] * 24
    for row in by_hour:
        profile[row["hour"]] = row["value"]
        counts_by_hour[row["hour"]] = row["n"]
    counts["profile"] = {"stat": profile_statistic(), "days": PROFILE_DAYS, "bps": profile, "n": counts_by_hour}
    counts["settings"] = _by_settings(recent)
    return counts


def _by_settings(recent):
    """Throughput by parallel streams and window asked for, as IEPM's bulk-throughput pages
    tabulated it to find the optimum: a few rows, the best first."""
    rows = list(
        recent.values("streams", "window_bytes")
        .annotate(value=Median(headline_expr()), n=Count("pk"))
        .order_by(F("value").desc(nulls_last=True), "streams", "window_bytes")[:SETTINGS_ROWS]
    )
    return rows


def chart_points(site, limit=CHART_POINTS):
    """The newest `limit` finished measurements as chart points, x in ms since the epoch
    (what Chart.js's time scale reads without a parser), quick and full runs apart."""
    rows = (
        Measurement.objects.filter(site=site, status=Status.DONE)
        .order_by("-created_at")
        .annotate(headline=headline_expr())
        .values_list("created_at", "mode", "headline", "full_bps", "rtt_us", "slug")[:limit]
    )
    quick, full, rtt = [], [], []
    for created_at, mode, headline, full_bps, rtt_us, slug in reversed(rows):
        x = int(created_at.timestamp() * 1000)
        if mode == Mode.QUICK:
            if headline is not None:
                quick.append({"x": x, "y": headline, "slug": slug})
        elif full_bps is not None:
            full.append({"x": x, "y": full_bps, "slug": slug})
        if rtt_us is not None:
            rtt.append({"x": x, "y": rtt_us / 1000.0, "slug": slug})
    return {"quick": quick, "full": full, "rtt_ms": rtt, "limit": limit}


def recent_page(site, page, size, vantage_id=None):
    """One page of the table (the site's, or one path's with vantage_id), newest first. Fetching
    size + 1 rows says whether an older page exists without counting all of the rows."""
    offset = (page - 1) * size
    rows = Measurement.objects.filter(site=site)
    if vantage_id is not None:
        rows = rows.filter(vantage_id=vantage_id)
    rows = list(
        rows.select_related("vantage")
        .only(
            "slug",
            "mode",
            "status",
            "created_at",
            "duration_s",
            "streams",
            "window_bytes",
            "congestion",
            "quick_mode_entered",
            "quick_bps",
            "cumulative_bps",
            "rtt_us",
            "retransmits",
            "failure_code",
            "quick_ci_pct",
            "quick_converged",
            "quick_answered",
            "window_limited",
            "rwnd_limited_pct",
            "vantage__name",
        )
        .order_by("-created_at")[offset : offset + size + 1]
    )
    return rows[:size], len(rows) > size


def measurements_between(site, since=None, until=None):
    """The site's measurements created on or after `since` and on or before `until` (UTC days,
    both inclusive), oldest first."""
    qs = Measurement.objects.filter(site=site)
    if since is not None:
        qs = qs.filter(created_at__gte=_utc_midnight(since))
    if until is not None:
        qs = qs.filter(created_at__lt=_utc_midnight(until + datetime.timedelta(days=1)))
    return qs.order_by("created_at", "pk")


def _utc_midnight(day):
    return datetime.datetime.combine(day, datetime.time.min, tzinfo=datetime.timezone.utc)
