"""The measure app's page views: the sites overview, a site's page and the grid, the request
form, the permalink (with its htmx progress partial) and the CSV / JSON downloads.

Domain work lives in models and plain modules (creating and enqueuing a measurement:
dispatch.py; the history and analyses: paths.py; the progress bar: progress.py; thinning a
trace for the charts: results.py); these functions only pick rows, check access and render.
"""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, ValidationError
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import pagecache, paths, progress
from .csvexport import BadQuery, csv_response, measurement_csv_response, parse_period
from .dispatch import QuotaExceeded, request_longer_run, request_measurement
from .forms import MeasurementPageForm
from .models import Measurement, MeasurementTrace, Site
from .results import chart_trace, quick_window, trace_csv_rows
from .vocab import MODES


@require_GET
def healthz(request):
    # The benchmark's yardstick: no database, no template, no session.
    return HttpResponse("ok", content_type="text/plain")


@require_GET
def sites(request):
    sites = pagecache.for_all_sites("overview", paths.sites_overview)
    found = pagecache.for_all_sites("paths", paths.paths_by_site)
    # Alerts open after a result's transaction: their flags are read fresh, never cached.
    flags = paths.path_flags()
    for site in sites:
        site.paths = [dict(p, flag=flags.get((site.pk, p["vantage"]))) for p in found.get(site.pk, [])]
    return render(request, "measure/sites.html", {"sites": sites})


# --- a site's page, per path (`/sites/<slug>/?vantage=NAME`), and the grid of every path -----
# A site seen from several vantages is several paths; the page lists them and shows one path's
# history and IEPM-BW analyses (paths.py) at a time, keeping quick, full and validate apart.

TABLE_PAGE_SIZE = 25
# 25,000,000 rows back, far past any site's history; a larger number once reached PostgreSQL
# as an OFFSET beyond bigint (a 500).
PAGE_MAX = 1_000_000


def page_number(raw):
    try:
        page = max(1, int(raw))
    except (TypeError, ValueError):
        return 1
    if page > PAGE_MAX:
        raise BadRequest(f"page {page} is out of range: allowed 1 to {PAGE_MAX}.")
    return page


def _get_path(request, site, site_paths):
    """The row of the path named by ?vantage= (404 if the site has none from it); without one,
    the only path when there is exactly one, else None (the page then lists the paths)."""
    name = request.GET.get("vantage")
    if name:
        for row in site_paths:
            if row["name"] == name:
                return row
        raise Http404(f"No tests of {site.slug} from a vantage named {name!r}.")
    return site_paths[0] if len(site_paths) == 1 else None


@require_GET
def site_page(request, slug):
    site = get_object_or_404(Site, slug=slug)
    # Everything but the alert flags is cached under the site's data version (pagecache.py);
    # alerts open after a result's transaction, so their flags are read on every request.
    site_paths = pagecache.for_site(site, "paths", lambda: paths.site_paths(site))
    flags = paths.path_flags()
    site_paths = [dict(row, flag=flags.get((site.pk, row["vantage"]))) for row in site_paths]
    path = _get_path(request, site, site_paths)
    page = page_number(request.GET.get("page"))
    context = {"site": site, "paths": site_paths, "vantage": path, "page": page}
    if path is None:
        rows, has_next = pagecache.for_site(site, "table", lambda: paths.recent_page(site, page, TABLE_PAGE_SIZE), page)
        return render(request, "measure/site.html", {**context, "table": {"rows": rows, "has_next": has_next}})
    vantage_id = path["vantage"]
    counts = {mode: path[mode] for mode in MODES}
    mode = request.GET.get("mode") or max(MODES, key=lambda m: counts[m])
    if mode not in MODES:
        return HttpResponseBadRequest(
            f"mode={mode!r} is not a mode: use quick, full or validate, or leave mode out.",
            content_type="text/plain; charset=utf-8",
        )
    analyses = pagecache.for_site(site, "path", lambda: paths.path_analyses(site, vantage_id, mode), vantage_id, mode)
    rows, has_next = pagecache.for_site(
        site, "path-table", lambda: paths.recent_page(site, page, TABLE_PAGE_SIZE, vantage_id), vantage_id, page
    )
    return render(
        request,
        "measure/site.html",
        {
            **context,
            **analyses,
            "mode": mode,
            "mode_counts": counts,
            "flag": path["flag"],
            "table": {"rows": rows, "has_next": has_next},
        },
    )


@require_GET
def grid_page(request):
    return render(request, "measure/grid.html", {"grid": paths.grid()})


# --- requesting a test and its permalink ------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def measure_new(request):
    if request.method == "POST":
        form = MeasurementPageForm(request.POST)
        if form.is_valid():
            try:
                measurement = request_measurement(form, request.user)
            except QuotaExceeded as over:
                form.add_error(None, over.message)
                response = render(request, "measure/new.html", {"form": form}, status=429)
                response["Retry-After"] = str(over.retry_after_s)
                return response
            return redirect(measurement.get_absolute_url())
    else:
        form = MeasurementPageForm(initial=MeasurementPageForm.initial_from(request.GET))
    # A bound form here was refused: 400, with each message at its field.
    return render(request, "measure/new.html", {"form": form}, status=400 if form.is_bound else 200)


def _get_measurement(slug):
    return get_object_or_404(Measurement.objects.select_related("site", "vantage").with_longer_run(), slug=slug)


@require_GET
def measurement(request, slug):
    m = _get_measurement(slug)
    if request.htmx:
        if m.is_finished:
            # 286 stops htmx polling; the refresh swaps in the finished permalink page.
            return HttpResponse(status=286, headers={"HX-Refresh": "true"})
        # The status badge sits outside the polled element: it rides along out of band.
        return render(request, "measure/measurement.html#progress", {**progress.page_context(m), "oob": True})
    context = {
        "m": m,
        "og_url": request.build_absolute_uri(m.get_absolute_url()),
        "show_failure_detail": m.failure_detail_visible_to(request.user),
        "may_measure_longer": _may_act_on(request.user, m),
    }
    if not m.is_finished:
        context.update(progress.page_context(m))
        return render(request, "measure/measurement.html", context)

    # Decompressing and thinning a long multi-stream trace is the page's main cost.
    context["trace"] = pagecache.for_site(m.site, "chart-trace", lambda: _chart_trace(m), m.pk)
    return render(request, "measure/measurement.html", context)


def _may_act_on(user, m):
    # Actions on a test (measure longer) are its requester's and staff's; reading it is everyone's.
    return bool(user.is_authenticated and (user.is_staff or user.pk == m.requested_by_id))


def _get_measurement_for_user(user, slug):
    """The measurement if `user` may act on it; 404 otherwise, as for a slug that does not exist."""
    m = _get_measurement(slug)
    if not _may_act_on(user, m):
        raise Http404(f"Measurement {slug} is not yours: only its requester and staff can act on it.")
    return m


@login_required
@require_POST
def measure_longer(request, slug):
    """Issue 24: the full-mode run of a quick test's parameters, linked both ways."""
    quick = _get_measurement_for_user(request.user, slug)
    if not quick.offers_longer:
        return _refused(
            request,
            400,
            f"Measurement {quick.slug} cannot be measured longer: only a finished quick test whose quick "
            "answer is the result can (a full or validate run, or a quick one that fell back, already ran the full -t).",
        )
    try:
        longer = request_longer_run(quick, request.user)
    except ValidationError as invalid:
        return _refused(request, 400, f"The full run cannot be queued: {' '.join(invalid.messages)}")
    except QuotaExceeded as over:
        response = _refused(request, 429, over.message)
        response["Retry-After"] = str(over.retry_after_s)
        return response
    return redirect(longer.get_absolute_url())


def _refused(request, status, message):
    return render(request, "4xx.html", {"title": "Cannot measure longer", "message": message}, status=status)


def _chart_trace(m):
    trace = MeasurementTrace.objects.filter(measurement=m).first()
    if trace is None:
        return None
    # The charts shade the window quick mode measured (trace.quick_window).
    return chart_trace(trace.to_dict(), quick_window=quick_window(m))


def _get_trace(slug):
    m = _get_measurement(slug)
    trace = MeasurementTrace.objects.filter(measurement=m).first()
    if trace is None:
        raise Http404(f"Measurement {slug} has no stored trace (status: {m.status}).")
    return m, trace


def _csv_response(rows, filename):
    # The page downloads have always used bare newlines (the API keeps csv's \r\n).
    return csv_response(rows, filename, lineterminator="\n")


@require_GET
def trace_csv(request, slug):
    m, trace = _get_trace(slug)
    return _csv_response(trace_csv_rows(trace), f"quickprobe-{m.slug}-trace.csv")


@require_GET
def trace_json(request, slug):
    m, trace = _get_trace(slug)
    response = JsonResponse(trace.to_dict())
    response["Content-Disposition"] = f'attachment; filename="quickprobe-{m.slug}-trace.json"'
    return response


@require_GET
def site_measurements_csv(request, slug):
    site = get_object_or_404(Site, slug=slug)
    try:
        period = parse_period(request.GET)  # the same grammar and messages as the API's CSV
    except BadQuery as exc:
        return HttpResponseBadRequest(exc.text(), content_type="text/plain; charset=utf-8")
    return measurement_csv_response(site.measurements.all(), period, f"quickprobe-{site.slug}-measurements.csv")
