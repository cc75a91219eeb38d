"""What a result's history is: the sites overview, a site's table, and the IEPM-BW analyses of
one path (vantage -> site).

A site seen from two vantages is two paths with different bottlenecks, RTTs and time-of-day
patterns; quick estimates, full runs and validate runs answer different questions. So every
analysis here is for one path and keeps the modes apart.

Everything here aggregates in the database and returns a bounded amount of data (at most a
few hundred rows or points) whatever the number of stored measurements: a path tested every
few minutes for a year has 100,000 rows, and its page must cost about what a page with ten
rows costs. Traces are never read here. The views cache what these return under the site's
data version (pagecache.py); nothing here caches.
"""

import dataclasses
import datetime
import statistics
import zoneinfo

from django.db import connection
from django.db.models import (
    Aggregate,
    Avg,
    BooleanField,
    Case,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Max,
    Min,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
    Window,
)
from django.db.models.functions import Abs, ExtractHour, RowNumber
from django.utils import timezone

from .models import Measurement, Site, Vantage
from .units import format_window
from .vocab import MODES, Mode, Status

# The analyses describe the path as it is now: a median over a year would mix in route changes
# and upgrades (and sorting a year of rows per hour costs ~0.4 s at 100,000).
ANALYSIS_DAYS = 90
# Time of day is drawn for this many settings (the most tested ones); more lines are noise.
PROFILE_SETTINGS = 5
# A setting within this fraction of the best rate counts as "as good": the optimum is the
# cheapest of those (IEPM-BW's rule of thumb for choosing windows and streams).
OPTIMUM_WITHIN = 0.10
# Fewer runs than this and a statistic is not shown ("too few runs"), nor can a cell be the
# optimum: a median of one run is that run, of two their mean, and a p90 of two the larger;
# three is the least a single outlier cannot set (as GRID_MIN_BASELINE for the grid).
MIN_RUNS = 3
SCATTER_POINTS = 500
# Points drawn on the throughput / RTT charts: the newest N finished measurements.
CHART_POINTS = 500
# Grid cells compare a path's latest result with the median of this many results before it,
# of the same mode and settings, within GRID_DAYS.
GRID_BASELINE = 10
GRID_DAYS = 30
# The overview's trend: the mean of the last week against the mean of the three weeks before.
TREND_RECENT_DAYS = 7
TREND_PRIOR_DAYS = 21


def quick_answer_q(prefix=""):
    """The SQL form of "quick mode answered" (Measurement.quick_mark in QUICK_ANSWERS, given a
    quick test): quick_bps is the result."""
    # A quick estimate that was not the answer is never the headline: the run went on to -t and
    # its whole-run figure is the result (prober/EVENTS.md). quick_answered says so (issue 24);
    # rows from before it have it null and say it with quick_converged (null on older rows still).
    converged = Q(**{f"{prefix}quick_converged": True}) | Q(**{f"{prefix}quick_converged__isnull": True})
    answered = Q(**{f"{prefix}quick_answered": True}) | (Q(**{f"{prefix}quick_answered__isnull": True}) & converged)
    return Q(**{f"{prefix}quick_mode_entered": True}) & answered


def headline_expr(prefix=""):
    """The SQL form of Measurement.headline_bps: the quick estimate if quick mode answered,
    else what a plain iperf run reports."""
    return Case(
        When(quick_answer_q(prefix), then=F(f"{prefix}quick_bps")),
        default=F(f"{prefix}cumulative_bps"),
        output_field=FloatField(),
    )


# What "latest" means on every page that shows one (the overview's "Last quick" / "Last full",
# the grid's cells): the newest finished (done) test by created_at, the larger pk breaking a tie
# (two rows of one bulk-created sweep can share a created_at). Requested time, not finished
# time: a long full run finishing after a later quick test does not make it the newer result.
LATEST_ORDER = ("-created_at", "-pk")


def latest_first(queryset):
    """queryset's finished tests, the latest (LATEST_ORDER) first."""
    return queryset.filter(status=Status.DONE).order_by(*LATEST_ORDER)


@dataclasses.dataclass(frozen=True)
class Saving:
    """What quick mode saved against runs of the tests' own -t: seconds and bytes not spent, of
    the seconds and bytes those runs would have taken. Adds up over tests."""

    tests: int
    time_s: float
    run_s: float
    bytes: float
    run_bytes: float

    @property
    def time_pct(self):
        return 100.0 * self.time_s / self.run_s if self.run_s else None

    @property
    def traffic_pct(self):
        return 100.0 * self.bytes / self.run_bytes if self.run_bytes else None

    def __add__(self, other):
        return Saving(*(a + b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True)))


NO_SAVING = Saving(0, 0.0, 0.0, 0.0, 0.0)


def quick_savings(queryset):
    """The Saving of these finished quick tests: quick_saving() of the sums of the answered and
    of the other tests (two groups, one query, whatever the number of rows)."""
    groups = (
        queryset.filter(status=Status.DONE, mode=Mode.QUICK, elapsed_s__isnull=False)
        .annotate(
            answered=Case(When(quick_answer_q(), then=Value(True)), default=Value(False), output_field=BooleanField())
        )
        .values("answered")
        .annotate(
            tests=Count("pk"),
            duration=Sum("duration_s"),
            elapsed=Sum("elapsed_s"),
            sent=Sum("bytes_sent"),
            rate_t=Sum(ExpressionWrapper(headline_expr() * F("duration_s"), output_field=FloatField())),
        )
        .order_by()
    )
    total = NO_SAVING
    for g in groups:
        rate = g["rate_t"] / g["duration"] if g["rate_t"] is not None else None
        total += quick_saving(g["answered"], g["duration"], g["elapsed"], g["sent"], rate, tests=g["tests"])
    return total


def quick_saving(answered, duration_s, elapsed_s, bytes_sent, result_bps, tests=1):
    """The one definition of what quick mode saved (issue 27), for the permalink, the path page,
    the sweep page and the CSV: against a run of the test's own -t (duration_s), which takes
    duration_s seconds and sends the result's rate for that long (result_bps x duration_s / 8
    bytes: quick_bps is what such a run would report, prober/EVENTS.md).

    answered: the quick answer is the result (Measurement.quick_mark in QUICK_ANSWERS). A test
    that was not answered (it fell back to the full run, or quick mode was never entered) ran
    its whole -t and saved nothing. Not clamped at 0: an answer that took longer than -t (it
    cannot, today) would show as a loss rather than be hidden.

    Every term is linear, so the saving of a set of tests with the same `answered` is this
    function of their sums (tests, duration_s, elapsed_s, bytes_sent) with result_bps their
    duration-weighted rate, sum(rate x duration_s) / sum(duration_s): the path page sums in SQL."""
    # An unknown rate (no figure stored) leaves the traffic out rather than count bytes_sent lost.
    run_bytes = result_bps * duration_s / 8.0 if result_bps is not None else 0.0
    if not answered:
        return Saving(tests, 0.0, float(duration_s), 0.0, run_bytes)
    saved_bytes = run_bytes - (bytes_sent or 0) if result_bps is not None else 0.0
    return Saving(tests, duration_s - (elapsed_s or 0.0), float(duration_s), saved_bytes, run_bytes)


class Median(Aggregate):
    """percentile_cont(0.5) on PostgreSQL; other databases (SQLite in the embedded default)
    have no ordered-set aggregates, so they get the mean and the page says so."""

    function = "AVG"
    output_field = FloatField()

    def as_postgresql(self, compiler, conn, **extra):
        return self.as_sql(
            compiler, conn, template="percentile_cont(0.5) WITHIN GROUP (ORDER BY %(expressions)s)", **extra
        )


def _stat():
    return "median" if connection.vendor == "postgresql" else "mean"


def path_results(site_id, vantage_id, mode=None):
    qs = Measurement.objects.filter(site_id=site_id, vantage_id=vantage_id, status=Status.DONE)
    return qs.filter(mode=mode) if mode else qs


def setting_label(streams, window_bytes, congestion):
    window = format_window(window_bytes) if window_bytes else "default"
    return f"P{streams} w{window} {congestion or 'default'}"


def _since(days, now=None):
    return (now or timezone.now()) - datetime.timedelta(days=days)


# --- the sites overview: every site's latest results and trend ------------------------------


def _latest(site_ref, modes, value, marked=False):
    # "Latest" as the grid means it (LATEST_ORDER), across the site's vantages.
    qs = latest_first(Measurement.objects.filter(site=site_ref, mode__in=modes))
    found = {
        "bps": Subquery(qs.annotate(v=value).values("v")[:1], output_field=FloatField()),
        "at": Subquery(qs.values("finished_at")[:1]),
        "slug": Subquery(qs.values("slug")[:1]),
    }
    if marked:
        # What Measurement.quick_mark_of needs to mark the figure as its permalink does.
        for name in ("quick_mode_entered", "quick_answered", "quick_converged"):
            found[name] = Subquery(qs.values(name)[:1])
    return found


def sites_overview(now=None):
    """Every enabled site with its latest quick and full results (one query: each figure is a
    correlated subquery that walks the (site, -created_at) index) and its 7-day trend."""
    quick = _latest(OuterRef("pk"), [Mode.QUICK], headline_expr(), marked=True)
    full = _latest(OuterRef("pk"), [Mode.FULL, Mode.VALIDATE], F("full_bps"))
    sites = list(
        Site.objects.filter(enabled=True)
        .annotate(
            last_quick_bps=quick["bps"],
            last_quick_at=quick["at"],
            last_quick_slug=quick["slug"],
            last_quick_entered=quick["quick_mode_entered"],
            last_quick_answered=quick["quick_answered"],
            last_quick_converged=quick["quick_converged"],
            last_full_bps=full["bps"],
            last_full_at=full["at"],
            last_full_slug=full["slug"],
        )
        .order_by("name")
    )
    means = trend_means(now)
    for site in sites:
        site.trend = trend_pct(*means.get(site.pk, (None, None)))
        site.last_quick_mark = (
            Measurement.quick_mark_of(
                Mode.QUICK, site.last_quick_entered, site.last_quick_answered, site.last_quick_converged
            )
            if site.last_quick_slug
            else ""
        )
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


# --- a site's paths ---------------------------------------------------------------------------


def site_paths(site):
    """The site's paths: one row per vantage that has tested it, with counts per mode and the
    newest test (one grouped query and the vantages' names, as many rows as vantages)."""
    rows = list(
        Measurement.objects.filter(site=site)
        .values("vantage")
        .annotate(
            total=Count("pk"),
            done=Count("pk", filter=Q(status=Status.DONE)),
            **{mode: Count("pk", filter=Q(status=Status.DONE, mode=mode)) for mode in MODES},
            last=Max("created_at"),
        )
        .order_by("vantage")
    )
    names = dict(Vantage.objects.filter(pk__in=[r["vantage"] for r in rows]).values_list("pk", "name"))
    for row in rows:
        row["name"] = names[row["vantage"]]
    return sorted(rows, key=lambda r: r["name"])


def paths_by_site(days=GRID_DAYS, now=None):
    """{site pk: [{"name", "vantage"}]} for the paths tested in the last `days` days, for the
    overview's links (one grouped query over the created_at index)."""
    pairs = (
        Measurement.objects.filter(created_at__gte=_since(days, now))
        .values_list("site", "vantage__name", "vantage")
        .distinct()
        .order_by("site", "vantage__name")
    )
    found = {}
    for site_id, name, vantage_id in pairs:
        found.setdefault(site_id, []).append({"name": name, "vantage": vantage_id})
    return found


# --- history of one path: the charts and the table -----------------------------------------


def path_summary(site_id, vantage_id):
    return Measurement.objects.filter(site_id=site_id, vantage_id=vantage_id).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=Status.DONE)),
        failed=Count("pk", filter=Q(status=Status.FAILED)),
        first=Min("created_at"),
        last=Max("created_at"),
    )


def chart_points(site_id, vantage_id, limit=CHART_POINTS):
    """The path's newest `limit` finished tests as chart points (x: ms since the epoch), each
    mode apart; quick points carry their error bar when the prober gave one."""
    rows = (
        path_results(site_id, vantage_id)
        .order_by("-created_at")
        .annotate(headline=headline_expr())
        .values_list(
            "created_at",
            "mode",
            "headline",
            "quick_mode_entered",
            "quick_ci_pct",
            "quick_converged",
            "quick_answered",
            "rtt_us",
            "window_limited",
            "slug",
        )[:limit]
    )
    series = {mode: [] for mode in MODES}
    rtt = []
    for created_at, mode, headline, entered, ci_pct, converged, answered, rtt_us, limited, slug in reversed(rows):
        x = int(created_at.timestamp() * 1000)
        # Issue 24: an answer at the deadline (answered, not converged) is the result, with its bar.
        converged = converged if answered is None else answered
        if headline is not None:
            point = {"x": x, "y": headline, "slug": slug, "limited": bool(limited)}
            if mode == Mode.QUICK and entered and converged is False:
                point["converged"] = False  # y is the full run's figure; the estimate had no bar to show
            elif mode == Mode.QUICK and entered and ci_pct is not None:
                point.update(ci_pct=ci_pct, converged=converged)
            series[mode].append(point)
        if rtt_us is not None:
            rtt.append({"x": x, "y": rtt_us / 1000.0, "slug": slug})
    return {**series, "rtt_ms": rtt, "limit": limit}


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


def path_analyses(site, vantage_id, mode):
    """Everything the site page shows for one path and mode (cached as one entry)."""
    matrix = settings_matrix(site.pk, vantage_id, mode)
    return {
        "days": ANALYSIS_DAYS,
        "summary": path_summary(site.pk, vantage_id),
        "chart": chart_points(site.pk, vantage_id),
        "profile": time_of_day(site, vantage_id, mode),
        "matrix": matrix,
        "matrix_lines": [{"congestion": t["congestion"], "lines": t["lines"]} for t in matrix],
        "quick_vs_full": quick_vs_full(site.pk, vantage_id),
        "min_runs": MIN_RUNS,
    }


# --- window x streams: the IEPM-BW table, its lines and its optimum -------------------------


def _cost(cell):
    # Fewest streams first (gentlest on other traffic), then the smallest window; the default
    # window ranks after every explicit one, since autotuning may grow it to the maximum.
    return (cell["streams"], cell["window_bytes"] is None, cell["window_bytes"] or 0)


def settings_matrix(site_id, vantage_id, mode, days=ANALYSIS_DAYS, now=None):
    """{congestion control: table} for one path and mode. A table has the windows and streams
    tested, a cell per (streams, window) with the median rate, the count and how many of those
    runs were window-limited, the best cell, the optimum (the cheapest cell within
    OPTIMUM_WITHIN of the best) and the dates its results span."""
    rows = (
        path_results(site_id, vantage_id, mode)
        .filter(created_at__gte=_since(days, now))
        .values("congestion", "streams", "window_bytes")
        .annotate(
            value=Median(headline_expr()),
            n=Count("pk"),
            first=Min("created_at"),
            last=Max("created_at"),
            limited=Count("pk", filter=Q(window_limited=True)),
        )
        .order_by("congestion", "streams", "window_bytes")
    )
    tables = {}
    for row in rows:
        if row["value"] is not None:
            tables.setdefault(row["congestion"] or "default", []).append(row)
    return [_table(cc, cells) for cc, cells in sorted(tables.items())]


def _table(congestion, cells):
    windows = sorted({c["window_bytes"] for c in cells}, key=lambda w: (w is None, w or 0))
    streams = sorted({c["streams"] for c in cells})
    counted = [c for c in cells if c["n"] >= MIN_RUNS]
    best = max(counted or cells, key=lambda c: c["value"])
    good_enough = [c for c in counted if c["value"] >= (1 - OPTIMUM_WITHIN) * best["value"]]
    optimum = min(good_enough, key=_cost) if good_enough else None
    by_key = {(c["streams"], c["window_bytes"]): c for c in cells}
    grid = []
    for s in streams:
        grid.append({"streams": s, "cells": [_cell(by_key.get((s, w)), best, optimum) for w in windows]})
    lines = [
        {
            "streams": s,
            "points": [
                {"x": c["window_bytes"], "y": c["value"], "n": c["n"]}
                for c in counted
                if c["streams"] == s and c["window_bytes"]
            ],
        }
        for s in streams
    ]
    return {
        "congestion": congestion,
        "windows": windows,
        "rows": grid,
        "best": best,
        "optimum": optimum,
        "first": min(c["first"] for c in cells),
        "last": max(c["last"] for c in cells),
        "tests": sum(c["n"] for c in cells),
        "lines": [line for line in lines if line["points"]],
    }


def _cell(cell, best, optimum):
    if cell is None:
        return None
    share = min(1.0, cell["value"] / best["value"]) if best["value"] else 0.0
    too_few = cell["n"] < MIN_RUNS
    return {
        **cell,
        "share": share,
        "too_few": too_few,
        "is_best": cell is best,
        "is_optimum": cell is optimum,
        # A cell is marked when most of its runs were held back by the server's window.
        "window_limited": cell["limited"] * 2 > cell["n"],
        # Heat: white at 0, the accent blue at the best rate (alpha keeps the text legible).
        "heat": "transparent" if too_few else f"rgba(31, 95, 191, {0.08 + 0.6 * share:.2f})",
    }


# --- time of day, in the site's own time zone ------------------------------------------------


def time_of_day(site, vantage_id, mode, days=ANALYSIS_DAYS, now=None):
    """Median rate by hour of day in the site's time zone for the PROFILE_SETTINGS most tested
    settings: at most 5 x 24 values from two grouped queries."""
    tz = zoneinfo.ZoneInfo(site.time_zone)
    recent = path_results(site.pk, vantage_id, mode).filter(created_at__gte=_since(days, now))
    top = list(
        recent.values("streams", "window_bytes", "congestion")
        .annotate(n=Count("pk"))
        .order_by("-n", "streams", "window_bytes", "congestion")[:PROFILE_SETTINGS]
    )
    if not top:
        return {"time_zone": site.time_zone, "stat": _stat(), "days": days, "settings": []}
    which = Q()
    for row in top:
        which |= Q(streams=row["streams"], window_bytes=row["window_bytes"], congestion=row["congestion"])
    hours = (
        recent.filter(which)
        .annotate(hour=ExtractHour("created_at", tzinfo=tz))
        .values("streams", "window_bytes", "congestion", "hour")
        .annotate(value=Median(headline_expr()), n=Count("pk"))
    )
    series = {
        (r["streams"], r["window_bytes"], r["congestion"]): {
            "label": setting_label(r["streams"], r["window_bytes"], r["congestion"]),
            "bps": [None] * 24,
            "n": [0] * 24,
            "tests": r["n"],
        }
        for r in top
    }
    for row in hours:
        line = series[(row["streams"], row["window_bytes"], row["congestion"])]
        line["bps"][row["hour"]] = row["value"]
        line["n"][row["hour"]] = row["n"]
    return {"time_zone": site.time_zone, "stat": _stat(), "days": days, "settings": list(series.values())}


# --- quick vs full: the paper's Figure 7 from validate runs, and what quick mode saved ------


class Percentile(Median):
    """percentile_cont(fraction) on PostgreSQL (the mean elsewhere, as Median)."""

    def __init__(self, expression, fraction, **extra):
        self.fraction = float(fraction)
        super().__init__(expression, **extra)

    def as_postgresql(self, compiler, conn, **extra):
        return self.as_sql(
            compiler,
            conn,
            template=f"percentile_cont({self.fraction!r}) WITHIN GROUP (ORDER BY %(expressions)s)",
            **extra,
        )


def quick_vs_full(site_id, vantage_id, days=ANALYSIS_DAYS, now=None, limit=SCATTER_POINTS):
    since = _since(days, now)
    validate = path_results(site_id, vantage_id, Mode.VALIDATE).filter(
        created_at__gte=since, validate_quick_bps__isnull=False, full_bps__isnull=False
    )
    points = [
        {
            "x": full,
            "y": quick,
            "error_pct": err,
            "ci_pct": ci,
            # as chart_points: False only where the estimate was not the answer (fell back)
            "converged": True if answered is True else conv,
            "slug": slug,
        }
        for full, quick, err, ci, conv, answered, slug in validate.order_by("-created_at").values_list(
            "full_bps",
            "validate_quick_bps",
            "validate_error_pct",
            "validate_quick_ci_pct",
            "validate_quick_converged",
            "validate_quick_answered",
            "slug",
        )[:limit]
    ]
    # The error of what quick mode reports. Since issue 24 it answers at its deadline whether or
    # not it converged (the validate object's quick_answered): its estimate is the result, and
    # counts with its own error. One that fell back (asked to run until converged, or a row from
    # a prober before issue 24, which has quick_converged alone) is never the result, the full run
    # it falls back to is (prober/EVENTS.md), so it counts 0, as bench-quick counted it. Its own
    # estimate stays on the scatter, marked.
    fell_back_q = Q(validate_quick_converged=False) & (
        Q(validate_quick_answered__isnull=True) | Q(validate_quick_answered=False)
    )
    reported = Case(
        When(fell_back_q, then=Value(0.0)),
        default=Abs("validate_error_pct"),
        output_field=FloatField(),
    )
    fell_back = Count("pk", filter=fell_back_q)
    if connection.vendor == "postgresql":
        error = validate.aggregate(
            n=Count("pk"), fell_back=fell_back, median=Percentile(reported, 0.5), p90=Percentile(reported, 0.9)
        )
    else:
        # No ordered-set aggregates (SQLite, make run's default): the plotted points' errors.
        errors = sorted(
            0.0 if p["converged"] is False else abs(p["error_pct"]) for p in points if p["error_pct"] is not None
        )
        error = {
            "n": len(errors),
            "fell_back": sum(p["converged"] is False for p in points),
            "median": statistics.median(errors) if errors else None,
            "p90": errors[min(len(errors) - 1, int(0.9 * len(errors)))] if errors else None,
        }
    saved = quick_savings(path_results(site_id, vantage_id, Mode.QUICK).filter(created_at__gte=since))
    return {"stat": _stat(), "days": days, "error": error, "points": points, "limit": limit, "saved": saved}


# --- the series alerts and the grid compare ---------------------------------------------------


def series_key(measurement, same_settings):
    """Names the results a measurement is compared with: all of its path and mode ("any"), or
    only those with its streams, window and congestion control."""
    if not same_settings:
        return "any"
    return setting_label(measurement.streams, measurement.window_bytes, measurement.congestion)


def series_before(measurement, same_settings, since, limit):
    """The newest `limit` results of the measurement's path, mode (and settings) created at or
    before it and after `since`, newest first, as (pk, slug, created_at, bps). One indexed query."""
    qs = path_results(measurement.site_id, measurement.vantage_id, measurement.mode).filter(
        created_at__gte=since, created_at__lte=measurement.created_at
    )
    if same_settings:
        qs = qs.filter(
            streams=measurement.streams, window_bytes=measurement.window_bytes, congestion=measurement.congestion
        )
    rows = (
        qs.annotate(bps=headline_expr())
        .exclude(bps=None)
        .order_by("-created_at", "-pk")
        .values_list("pk", "slug", "created_at", "bps")[:limit]
    )
    return list(rows)


# --- the grid: every path's latest result against its own baseline -------------------------

# Cell colours: the latest result as a share of the path's baseline.
GRID_LEVELS = (
    (0.9, "ok", "at or above 90 % of its baseline"),
    (0.7, "warn", "70-90 % of its baseline"),
    (0.0, "bad", "below 70 % of its baseline"),
)
GRID_MIN_BASELINE = 3


def grid(now=None):
    """Rows of enabled sites, a cell per enabled vantage: the path's newest result (within
    GRID_DAYS) against the median of the GRID_BASELINE results before it of the same mode and
    settings. One query with a window function, at most GRID_BASELINE + 1 rows per series."""
    sites = list(Site.objects.filter(enabled=True).order_by("name"))
    vantages = list(Vantage.objects.filter(enabled=True).order_by("name"))
    ranked = (
        Measurement.objects.filter(status=Status.DONE, created_at__gte=_since(GRID_DAYS, now))
        .annotate(
            bps=headline_expr(),
            rn=Window(
                RowNumber(),
                partition_by=[
                    F("site_id"),
                    F("vantage_id"),
                    F("mode"),
                    F("streams"),
                    F("window_bytes"),
                    F("congestion"),
                ],
                # The grid's "latest" is the overview's: LATEST_ORDER.
                order_by=[F(key.lstrip("-")).desc() for key in LATEST_ORDER],
            ),
        )
        .filter(rn__lte=GRID_BASELINE + 1)
        .values_list(
            "site_id",
            "vantage_id",
            "mode",
            "streams",
            "window_bytes",
            "congestion",
            "rn",
            "created_at",
            "bps",
            "slug",
            "window_limited",
            "pk",
            "quick_mode_entered",
            "quick_answered",
            "quick_converged",
        )
    )
    series = {}
    for site_id, vantage_id, mode, streams, window, cc, rn, created_at, bps, slug, limited, pk, *quick in ranked:
        entry = series.setdefault((site_id, vantage_id, mode, streams, window, cc), {"rest": []})
        if rn == 1:
            entry.update(
                at=created_at,
                pk=pk,
                bps=bps,
                slug=slug,
                mode=mode,
                mark=Measurement.quick_mark_of(mode, *quick),
                limited=bool(limited),
                setting=setting_label(streams, window, cc),
            )
        elif bps is not None:
            entry["rest"].append(bps)
    latest = {}
    for (site_id, vantage_id, *_), entry in series.items():
        # The path's latest across its series, by LATEST_ORDER (created_at, then pk).
        best = latest.get((site_id, vantage_id))
        if "at" in entry and (best is None or (entry["at"], entry["pk"]) > (best["at"], best["pk"])):
            latest[(site_id, vantage_id)] = entry
    flags = path_flags()
    rows = [
        {
            "site": site,
            "cells": [_grid_cell(latest.get((site.pk, v.pk)), flags.get((site.pk, v.pk)), v) for v in vantages],
        }
        for site in sites
    ]
    return {"vantages": vantages, "rows": rows, "days": GRID_DAYS, "baseline": GRID_BASELINE, "levels": GRID_LEVELS}


def _grid_cell(entry, flag, vantage):
    cell = {"vantage": vantage, "flag": flag, "level": "none"}
    if entry is None:
        return cell
    cell.update(entry)
    if entry["bps"] is not None and len(entry["rest"]) >= GRID_MIN_BASELINE:
        baseline = statistics.median(entry["rest"])
        cell["baseline"] = baseline
        cell["ratio"] = entry["bps"] / baseline if baseline else None
        if cell["ratio"] is not None:
            cell["level"] = next(name for floor, name, _ in GRID_LEVELS if cell["ratio"] >= floor)
    else:
        cell["level"] = "new"
    return cell


# --- flags other apps put on paths (alerts) -------------------------------------------------

_flaggers = []


def register_path_flagger(flagger):
    """flagger() -> {(site_id, vantage_id): text}. Apps that judge paths (alerts) register one in
    their AppConfig.ready(), so the overview and grid can flag paths without measure importing
    them."""
    if flagger not in _flaggers:
        _flaggers.append(flagger)


def path_flags():
    flags = {}
    for flagger in _flaggers:
        for key, text in flagger().items():
            flags[key] = f"{flags[key]}; {text}" if key in flags else text
    return flags
