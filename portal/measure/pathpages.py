"""The site page, per path (`/sites/<slug>/?vantage=NAME`), and the grid of every path.

A site seen from several vantages is several paths; the page lists them and shows one path's
history and IEPM-BW analyses (paths.py) at a time, keeping quick, full and validate apart.
"""

from django.core.exceptions import BadRequest
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from . import history, pagecache, paths
from .models import Site

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
        rows, has_next = pagecache.for_site(
            site, "table", lambda: history.recent_page(site, page, TABLE_PAGE_SIZE), page
        )
        return render(request, "measure/site.html", {**context, "table": {"rows": rows, "has_next": has_next}})
    vantage_id = path["vantage"]
    counts = {mode: path[mode] for mode in paths.MODES}
    mode = request.GET.get("mode") or max(paths.MODES, key=lambda m: counts[m])
    if mode not in paths.MODES:
        return HttpResponseBadRequest(
            f"mode={mode!r} is not a mode: use quick, full or validate, or leave mode out.",
            content_type="text/plain; charset=utf-8",
        )
    analyses = pagecache.for_site(site, "path", lambda: _analyses(site, vantage_id, mode), vantage_id, mode)
    rows, has_next = pagecache.for_site(
        site, "path-table", lambda: paths.recent_page(site.pk, vantage_id, page, TABLE_PAGE_SIZE), vantage_id, page
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


def _analyses(site, vantage_id, mode):
    matrix = paths.settings_matrix(site.pk, vantage_id, mode)
    return {
        "days": paths.ANALYSIS_DAYS,
        "summary": paths.path_summary(site.pk, vantage_id),
        "chart": paths.chart_points(site.pk, vantage_id),
        "profile": paths.time_of_day(site, vantage_id, mode),
        "matrix": matrix,
        "matrix_lines": [{"congestion": t["congestion"], "lines": t["lines"]} for t in matrix],
        "quick_vs_full": paths.quick_vs_full(site.pk, vantage_id),
        "min_runs": paths.MIN_RUNS,
    }


@require_GET
def grid_page(request):
    return render(request, "measure/grid.html", {"grid": paths.grid()})
