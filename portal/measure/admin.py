"""The Django admin: sites and vantages are managed here; measurements are read-only results
with one action, cancel; API tokens are issued by `manage.py issue_token`, only listed here."""

from django.contrib import admin, messages
from django.utils import timezone

from .models import ApiToken, Measurement, Quota, Site, Vantage
from .units import format_bps, format_bytes, format_pct, format_seconds, format_us
from .vocab import RESULT_FIELD_NAMES, UNFINISHED_STATUSES, FailureCode, Status


def _with_bytes(value):
    # Sizes keep their exact count beside the rounded one: the admin is where staff check them.
    return "–" if value is None else f"{format_bytes(value)} ({value} B)"


# The admin shows figures in the units the pages use, not the stored floats (25978974260.0):
# a result field's unit is its name's suffix (prober/EVENTS.md's convention), or its prefix.
UNIT_FORMATS = {"_bps": format_bps, "_bytes": _with_bytes, "_us": format_us, "_pct": format_pct, "_s": format_seconds}
UNIT_PREFIXES = {"bytes_": _with_bytes, "server_bytes": _with_bytes}


def unit_of(name):
    return next((fmt for suffix, fmt in UNIT_FORMATS.items() if name.endswith(suffix)), None) or next(
        (fmt for prefix, fmt in UNIT_PREFIXES.items() if name.startswith(prefix)), None
    )


def with_units(name, description=None):
    """An admin display method showing field `name` in its unit, sorted by the stored value."""

    @admin.display(description=description or name.replace("_", " "), ordering=name)
    def shown(self, obj):
        return unit_of(name)(getattr(obj, name))

    return shown


_UNIT_RESULT_FIELDS = tuple(name for name in RESULT_FIELD_NAMES if unit_of(name))


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
        "quick_bps_shown",
        "cumulative_bps_shown",
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
    # Figures with a unit are shown through their *_shown method (below) instead of raw.
    readonly_fields = (
        "slug",
        "created_at",
        "started_at",
        "finished_at",
        "heartbeat_at",
        "result",
        *(f"{name}_shown" if name in _UNIT_RESULT_FIELDS else name for name in RESULT_FIELD_NAMES),
    )
    exclude = _UNIT_RESULT_FIELDS

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


for _name in _UNIT_RESULT_FIELDS:
    setattr(MeasurementAdmin, f"{_name}_shown", with_units(_name))


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
