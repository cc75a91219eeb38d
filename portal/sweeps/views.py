"""The run page: a live grid of a sweep run's cells. Readable by anyone with its link, like a
permalink (every cell links to a public permalink anyway); a failed cell's stored reason is
shown to staff only, the public sees its code's meaning. Defining and starting sweeps is the
admin's, staff only."""

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from portal.measure.vocab import SweepRunStatus

from . import summary
from .models import SweepRun

POLL_S = 2
# A big grid is costly to render; poll it less often.
POLL_LARGE_S = 10
LARGE_RUN_CELLS = 2000


def _get_run_for_user(user, slug):
    """(run, detail): any user, signed in or not, may read a run by its unguessable slug, as a
    permalink (404 for an unknown one); only staff get the cells' stored failure reasons."""
    sweep_run = get_object_or_404(SweepRun.objects.select_related("sweep"), slug=slug)
    return sweep_run, bool(user.is_authenticated and user.is_staff)


@require_GET
def run(request, slug):
    sweep_run, detail = _get_run_for_user(request.user, slug)
    columns, rows, totals = summary.run_grid(sweep_run, detail=detail)
    context = {
        "run": sweep_run,
        "sweep": sweep_run.sweep,
        "columns": columns,
        "rows": rows,
        "totals": totals,
        "poll_s": POLL_LARGE_S if totals.cells > LARGE_RUN_CELLS else POLL_S,
    }
    if request.htmx:
        # 286 tells htmx to stop polling once every cell is final; the last grid is still swapped in.
        status = 286 if totals.finished and sweep_run.status == SweepRunStatus.PLANNED else 200
        return render(request, "sweeps/run.html#grid", context, status=status)
    return render(request, "sweeps/run.html", context)
