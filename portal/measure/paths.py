"""Paths (vantage -> site) and the IEPM-BW analyses of a path's results.

A site seen from two vantages is two paths with different bottlenecks, RTTs and time-of-day
patterns; quick estimates, 20 s runs and validate runs answer different questions. So every
analysis here is for one path and keeps the modes apart.

Like history.py, everything aggregates in the database and returns a bounded amount of data
(at most a few hundred rows or points) whatever the number of stored measurements: a path
tested every few minutes for a year has 100,000 rows, and its page must cost about what a
page with ten rows costs. Traces are never read here.
"""
import datetime
import statistics
import zoneinfo

from django.db import connection
from django.db.models import Avg, Count, F, FloatField, Max, Min, Q, Sum, Window
from django.db.models.functions import Abs, ExtractHour, RowNumber
from django.utils import timezone

from .forms import format_window
from .history import Median, headline_expr
from .models import Measurement, Vantage

MODES = ("quick", "full", "validate")
# The analyses describe the path as it is now (see history.PROFILE_DAYS).
ANALYSIS_DAYS = 90
# Time of day is drawn for this many settings (the most tested ones); more lines are noise.
PROFILE_SETTINGS = 5
# A setting within this fraction of the best rate counts as "as good": the optimum is the
# cheapest of those (IEPM-BW's rule of thumb for choosing windows and streams).
OPTIMUM_WITHIN = 0.10
SCATTER_POINTS = 500
# Grid cells compare a path's latest result with the median of this many results before it,
# of the same mode and settings, within GRID_DAYS.
GRID_BASELINE = 10
GRID_DAYS = 30
# A path whose rwnd-limited share of the run is at least this much was held back by the
# server's receive window, not by the network (see results.window_limited()).
WINDOW_LIMITED_PCT = 20.0


def path_results(site_id, vantage_id, mode=None):
    qs = Measurement.objects.filter(site_id=site_id, vantage_id=vantage_id, status="done")
    return qs.filter(mode=mode) if mode else qs


def setting_label(streams, window_bytes, congestion):
    window = format_window(window_bytes) if window_bytes else "default"
    return f"P{streams} w{window} {congestion or 'default'}"


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
        created_at__gte=since, created_at__lte=measurement.created_at)
    if same_settings:
        qs = qs.filter(streams=measurement.streams, window_bytes=measurement.window_bytes,
                       congestion=measurement.congestion)
    rows = (qs.annotate(bps=headline_expr()).exclude(bps=None)
            .order_by("-created_at", "-pk").values_list("pk", "slug", "created_at", "bps")[:limit])
    return list(rows)


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
