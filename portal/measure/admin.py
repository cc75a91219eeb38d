"""The Django admin: sites and vantages are managed here; measurements are read-only results
with one action, cancel; API tokens are issued by `manage.py issue_token`, only listed here."""

from django.contrib import admin, messages
from django.utils import timezone

from .models import ApiToken, Measurement, Quota, Site, Vantage
from .vocab import RESULT_FIELD_NAMES, UNFINISHED_STATUSES, FailureCode, Status


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "host", "port", "protocol", "location", "enabled")
    list_filter = ("enabled", "protocol")
    search_fields = ("name", "slug", "host", "location")
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Vantage)
class VantageAdmin(admin.ModelAdmin):
    list_display = ("name", "description", "kernel", "last_seen", "enabled")
    list_filter = ("enabled",)
    readonly_fields = ("last_seen",)


@admin.register(Measurement)
class MeasurementAdmin(admin.ModelAdmin):
    list_display = (
        "slug",
        "site",
        "vantage",
        "mode",
        "status",
        "quick_bps",
        "cumulative_bps",
        "created_at",
        "requested_by",
    )
    list_filter = ("status", "mode", "site", "vantage")
    search_fields = ("slug", "site__slug", "requested_by__username")
    date_hierarchy = "created_at"
    list_select_related = ("site", "vantage", "requested_by")
    raw_id_fields = ("requested_by",)
    actions = ["cancel"]
    # Stored results come from the prober; editing them by hand would make them lie.
    readonly_fields = ("slug", "created_at", "started_at", "finished_at", "heartbeat_at", "result", *RESULT_FIELD_NAMES)

    def has_add_permission(self, request):
        # A row made here would never reach a worker: every measurement is created by the one
        # request path (the New test page, the API, sweeps), which sends its task on commit.
        return False

    def has_change_permission(self, request, obj=None):
        # A record of what the prober measured; the status moves only through the worker, the
        # reaper or the cancel action. Staff still see every field (view permission).
        return False

    def get_queryset(self, request):
        # The list never needs the result JSON; the trace lives in another table and is
        # never joined here.
        qs = super().get_queryset(request)
        return (
            qs.defer("result")
            if request.resolver_match and request.resolver_match.url_name.endswith("changelist")
            else qs
        )

    def has_cancel_permission(self, request):
        # has_change_permission is False for everyone (no hand edits), so cancelling checks the
        # "change measurement" permission itself: "view" alone must not fail someone's test.
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")

    @admin.action(description="Cancel selected queued or running measurements", permissions=["cancel"])
    def cancel(self, request, queryset):
        # A running test notices at its next heartbeat and stops its prober.
        count = queryset.filter(status__in=UNFINISHED_STATUSES).update(
            status=Status.FAILED,
            failure_code=FailureCode.CANCELLED,
            finished_at=timezone.now(),
            failure_reason=f"cancelled by {request.user.get_username()}",
        )
        self.message_user(request, f"{count} measurement(s) cancelled.", messages.SUCCESS)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "prefix", "created_at", "last_used")
    readonly_fields = ("key_hash", "prefix", "created_at", "last_used")
    search_fields = ("user__username", "prefix")

    def has_add_permission(self, request):
        return False  # tokens come from manage.py issue_token, which shows the secret once


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = ("__str__", "tests_per_hour", "max_pending", "test_seconds_per_day")
    raw_id_fields = ("user",)
    search_fields = ("user__username", "group__name")
