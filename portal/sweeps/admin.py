from django.contrib import admin, messages
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from portal.measure.vocab import UNFINISHED_STATUSES, Status, SweepRunStatus, SweepTrigger

from . import planning
from .forms import SweepForm
from .models import Sweep, SweepRun


@admin.register(Sweep)
class SweepAdmin(admin.ModelAdmin):
    form = SweepForm
    list_display = ("name", "enabled", "schedule", "matrix", "scope", "last_run")
    list_filter = ("enabled",)
    search_fields = ("name",)
    filter_horizontal = ("sites", "vantages")
    actions = ["run_now", "pause", "resume"]
    readonly_fields = ("recent_runs",)
    fieldsets = [
        (None, {"fields": ("name", "enabled")}),
        ("Targets", {"fields": ("all_sites", "sites", "all_vantages", "vantages")}),
        (
            "Parameter matrix",
            {
                "fields": (
                    "modes_text",
                    "windows_text",
                    "streams_text",
                    "congestion_text",
                    "duration_s",
                    "until_converged",
                )
            },
        ),
        ("Schedule and limits", {"fields": ("every_text", "cron", "slip_text", "budget_text")}),
        ("Runs", {"fields": ("recent_runs",)}),
    ]

    @admin.display(description="schedule")
    def schedule(self, sweep):
        return sweep.schedule_text

    @admin.display(description="settings")
    def matrix(self, sweep):
        return f"{len(sweep.settings_matrix())} ({', '.join(sweep.modes)}; -P {','.join(map(str, sweep.streams))})"

    @admin.display(description="sites x vantages")
    def scope(self, sweep):
        sites = "all sites" if sweep.all_sites else f"{sweep.sites.count()} site(s)"
        vantages = "all vantages" if sweep.all_vantages else f"{sweep.vantages.count()} vantage(s)"
        return f"{sites} x {vantages}"

    @admin.display(description="last run")
    def last_run(self, sweep):
        run = sweep.runs.order_by("-created_at").first()
        if run is None:
            return "–"
        return format_html('<a href="{}">{}</a>', run.get_absolute_url(), f"{run.created_at:%Y-%m-%d %H:%M} UTC")

    @admin.display(description="recent runs")
    def recent_runs(self, sweep):
        runs = sweep.runs.order_by("-created_at")[:10] if sweep.pk else []
        if not runs:
            return "none yet"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                '<li><a href="{}">{} UTC</a> ({})</li>',
                ((r.get_absolute_url(), f"{r.created_at:%Y-%m-%d %H:%M:%S}", r.get_trigger_display()) for r in runs),
            ),
        )

    @admin.action(description="Run selected sweeps now", permissions=["change"])
    def run_now(self, request, queryset):
        for sweep in queryset:
            run = planning.fire(sweep.pk, trigger=SweepTrigger.ADMIN)
            self.message_user(
                request,
                format_html('Sweep {} started: <a href="{}">run {}</a>.', sweep.name, run.get_absolute_url(), run.slug),
                messages.SUCCESS,
            )

    @admin.action(description="Pause selected sweeps", permissions=["change"])
    def pause(self, request, queryset):
        self._set_enabled(request, queryset, False)

    @admin.action(description="Resume selected sweeps", permissions=["change"])
    def resume(self, request, queryset):
        self._set_enabled(request, queryset, True)

    def _set_enabled(self, request, queryset, enabled):
        # One save per sweep, not queryset.update(): each save moves its beat entry too.
        count = 0
        for sweep in queryset.filter(enabled=not enabled):
            sweep.enabled = enabled
            sweep.save()
            count += 1
        self.message_user(request, f"{count} sweep(s) {'resumed' if enabled else 'paused'}.", messages.SUCCESS)


@admin.register(SweepRun)
class SweepRunAdmin(admin.ModelAdmin):
    list_display = ("sweep", "created_at", "trigger", "state", "cells", "page")
    list_filter = ("trigger", "sweep")
    list_select_related = ("sweep",)
    date_hierarchy = "created_at"
    # The stored status says only whether the cells are planned; "state" says what the run page
    # says (waiting, running, finished), so the two never disagree.
    fields = ("sweep", "trigger", "state", "created_at", "starts_at", "planned_at")
    readonly_fields = ("state",)

    def get_queryset(self, request):
        # The counts the run page's state line reads (summary.cell_state): a cell is open while
        # it was not skipped and its measurement is queued or running.
        measured = Q(cells__skip_code="")
        return (
            super()
            .get_queryset(request)
            .annotate(
                cell_count=Count("cells"),
                open_count=Count("cells", filter=measured & Q(cells__measurement__status__in=UNFINISHED_STATUSES)),
                done_count=Count("cells", filter=measured & Q(cells__measurement__status=Status.DONE)),
            )
        )

    @admin.display(description="cells", ordering="cell_count")
    def cells(self, run):
        return run.cell_count

    @admin.display(description="state")
    def state(self, run):
        if run.status != SweepRunStatus.PLANNED:
            return f"waiting for its start offset (starts {run.starts_at:%H:%M:%S} UTC)"
        word = "running" if run.open_count else "finished"
        return f"{word}, {run.done_count} done of {run.cell_count} cells"

    @admin.display(description="run page")
    def page(self, run):
        return format_html('<a href="{}">{}</a>', reverse("sweeps:run", kwargs={"slug": run.slug}), run.slug)

    def has_add_permission(self, request):
        return False  # runs come from the schedule, "run now" or `manage.py sweep run`

    def has_change_permission(self, request, obj=None):
        return False  # a run is a record of what happened
