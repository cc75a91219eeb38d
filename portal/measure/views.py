"""Page views: server-rendered pages, htmx partials and the CSV / JSON downloads.

Domain work (creating and enqueuing a measurement, reading progress, packing traces) lives in
models and plain modules; these functions only pick rows, check access and render.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.html import json_script
from django.views.decorators.http import require_GET, require_http_methods

from . import history, pagecache, paths, progress
from .csvexport import BadQuery, csv_response, measurement_csv_response, parse_period
from .forms import MeasurementPageForm
from .models import Measurement, MeasurementTrace, Site
from .quotas import QuotaExceeded
from .services import request_measurement
from .trace import quick_window, trace_csv_rows
from .vocab import Phase, Status

TABLE_PAGE_SIZE = 25


@require_GET
def healthz(request):
    # The benchmark's yardstick: no database, no template, no session.
    return HttpResponse("ok", content_type="text/plain")


@require_GET
def sites(request):
    sites = pagecache.for_all_sites("overview", history.sites_overview)
    found = pagecache.for_all_sites("paths", paths.paths_by_site)
    # Alerts open after a result's transaction: their flags are read fresh, never cached.
    flags = paths.path_flags()
    for site in sites:
        site.paths = [dict(p, flag=flags.get((site.pk, p["vantage"]))) for p in found.get(site.pk, [])]
    return render(request, "measure/sites.html", {"sites": sites})


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
    return get_object_or_404(Measurement.objects.select_related("site", "vantage"), slug=slug)


@require_GET
def measurement(request, slug):
    m = _get_measurement(slug)
    if request.htmx:
        if m.is_finished:
            # 286 stops htmx polling; the refresh swaps in the finished permalink page.
            return HttpResponse(status=286, headers={"HX-Refresh": "true"})
        # The status badge sits outside the polled element: it rides along out of band.
        return render(request, "measure/measurement.html#progress", {**_progress_context(m), "oob": True})
    context = {
        "m": m,
        "og_url": request.build_absolute_uri(m.get_absolute_url()),
        "show_failure_detail": m.failure_detail_visible_to(request.user),
    }
    if not m.is_finished:
        context.update(_progress_context(m))
        return render(request, "measure/measurement.html", context)

    # Decompressing and thinning a long multi-stream trace is the page's main cost.
    context["trace"] = pagecache.for_site(m.site, "chart-trace", lambda: _chart_trace(m), m.pk)
    return render(request, "measure/measurement.html", context)


# A chart is at most ~1000 pixels wide: a 60 s, 16-stream trace at 20 ms (3000 samples) would
# put megabytes of numbers into the page for nothing. The downloads carry every sample.
CHART_MAX_SAMPLES = 1500


def _chart_trace(m):
    """What the permalink's charts need, or None without a trace: the thinned trace already as
    the page's JSON script (encoding thousands of numbers is most of the page's cost), its
    number of streams and the stride."""
    trace = MeasurementTrace.objects.filter(measurement=m).first()
    if trace is None:
        return None
    # The charts shade the window quick mode measured (trace.quick_window).
    data = dict(thin_trace(trace.to_dict()), quick_window=quick_window(m))
    return {
        "json": json_script(data, "trace-data"),
        "streams": len(data.get("streams") or []),
        "stride": data.get("stride"),
    }


def thin_trace(data, limit=CHART_MAX_SAMPLES):
    """Every k-th sample of every series, k the smallest stride that fits `limit`."""
    n = len(data.get("t") or [])
    stride = -(-n // limit) if n > limit else 1
    if stride == 1:
        return data
    thinned = {
        key: (value[::stride] if isinstance(value, list) and key != "streams" else value) for key, value in data.items()
    }
    thinned["streams"] = [
        {key: (value[::stride] if isinstance(value, list) else value) for key, value in s.items()}
        for s in data.get("streams") or []
    ]
    thinned["stride"] = stride
    return thinned


# The steps of the progress bar; the other phases share one of them.
PHASE_STEPS = [
    (phase.value, phase.label)
    for phase in (Phase.QUEUED, Phase.CONNECTING, Phase.SLOW_START, Phase.MEASURING, Phase.STORING)
]
_PHASE_STEP = {
    Phase.FULL: Phase.MEASURING,
    Phase.FINISHING: Phase.STORING,
    Phase.DONE: Phase.STORING,
    Phase.FAILED: Phase.STORING,
}


def _progress_context(m):
    state = progress.read(m.pk) or {}
    phase = state.get("phase") or (Phase.QUEUED if m.status == Status.QUEUED else Phase.CONNECTING)
    if m.status == Status.QUEUED and phase != Phase.QUEUED:
        # The worker claimed the row between our read of it and of its progress: show the
        # status that goes with the phase.
        m.refresh_from_db(fields=["status", "started_at", "finished_at"])
    step = str(_PHASE_STEP.get(phase, phase))
    keys = [key for key, _ in PHASE_STEPS]
    current = keys.index(step) if step in keys else 0
    steps = []
    for i, (key, label) in enumerate(PHASE_STEPS):
        if key == Phase.MEASURING and phase == Phase.FULL:
            label = Phase.FULL.label
        steps.append(
            {"key": key, "label": label, "state": "past" if i < current else "current" if i == current else "future"}
        )
    return {
        "m": m,
        "phase": phase,
        "steps": steps,
        "elapsed_s": state.get("elapsed_s"),
        # A full run ends at its -t: what the progress line promises.
        "remaining_s": max(0.0, m.duration_s - state["elapsed_s"]) if state.get("elapsed_s") is not None else None,
        "samples": state.get("samples") or [],
    }


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
