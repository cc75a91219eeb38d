"""The site page, per path (`/sites/<slug>/?vantage=NAME`), and the grid of every path.

A site seen from several vantages is several paths; the page lists them and shows one path's
history and IEPM-BW analyses (paths.py) at a time, keeping quick, full and validate apart.
"""
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from . import history, paths
from .models import Site, Vantage

TABLE_PAGE_SIZE = 25


def _page_number(raw):
    try:
        return max(1, int(raw))
    except (TypeError, ValueError):
        return 1


def _get_path_vantage(request, site, site_paths):
    """The ?vantage= of the request (404 if the site has no such path); without one, the only
    path when there is exactly one, else None (the page then lists the paths)."""
    name = request.GET.get("vantage")
    if name:
        if not any(row["name"] == name for row in site_paths):
            raise Http404(f"No tests of {site.slug} from a vantage named {name!r}.")
        return get_object_or_404(Vantage, name=name)
    if len(site_paths) == 1:
        return Vantage.objects.get(pk=site_paths[0]["vantage"])
    return None


@require_GET
def site_page(request, slug):
    site = get_object_or_404(Site, slug=slug)
    site_paths = paths.site_paths(site)
    vantage = _get_path_vantage(request, site, site_paths)
    page = _page_number(request.GET.get("page"))
    context = {"site": site, "paths": site_paths, "vantage": vantage, "page": page}
    if vantage is None:
        rows, has_next = history.recent_page(site, page, TABLE_PAGE_SIZE)
        context["table"] = {"rows": rows, "has_next": has_next}
        return render(request, "measure/site.html", context)
    counts = paths.mode_counts(site.pk, vantage.pk)
    mode = request.GET.get("mode") or max(paths.MODES, key=lambda m: counts[m])
    if mode not in paths.MODES:
        return HttpResponseBadRequest(f"mode={mode!r} is not a mode: use quick, full or validate, or leave mode out.",
                                      content_type="text/plain; charset=utf-8")
    context.update(_path_context(site, vantage, mode, counts, page))
    return render(request, "measure/site.html", context)


def _path_context(site, vantage, mode, counts, page):
    rows, has_next = paths.recent_page(site.pk, vantage.pk, page, TABLE_PAGE_SIZE)
    matrix = paths.settings_matrix(site.pk, vantage.pk, mode)
    return {
        "mode": mode, "mode_counts": counts, "days": paths.ANALYSIS_DAYS,
        "summary": paths.path_summary(site.pk, vantage.pk),
        "chart": paths.chart_points(site.pk, vantage.pk),
        "profile": paths.time_of_day(site, vantage.pk, mode),
        "matrix": matrix,
        "matrix_lines": [{"congestion": t["congestion"], "lines": t["lines"]} for t in matrix],
        "quick_vs_full": paths.quick_vs_full(site.pk, vantage.pk),
        "table": {"rows": rows, "has_next": has_next},
        "flag": paths.path_flags().get((site.pk, vantage.pk)),
    }


@require_GET
def grid_page(request):
    return render(request, "measure/grid.html", {"grid": paths.grid()})
