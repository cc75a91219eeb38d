from django.contrib import admin

from portal.measure.admin import with_units

from .models import Alert, AlertRule, Delivery
from .webhooks import redact


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "enabled",
        "site",
        "vantage",
        "mode",
        "baseline_results",
        "consecutive",
        "threshold_pct",
        "email_to",
        "webhook_shown",
    )
    list_filter = ("enabled", "mode")
    search_fields = ("name",)
    fieldsets = [
        (None, {"fields": ("name", "enabled")}),
        ("Paths watched", {"fields": ("site", "vantage", "mode", "same_settings")}),
        ("When to alert", {"fields": ("baseline_results", "baseline_days", "consecutive", "threshold_pct")}),
        ("Where to send", {"fields": ("email_to", "webhook_url")}),
    ]
    readonly_fields = ("webhook_shown",)

    @admin.display(description="webhook URL")
    def webhook_shown(self, obj):
        # Webhook URLs carry their secret (a token in the path or query): the list and
        # view-only staff see it redacted; only who may change the rule sees it whole, to edit.
        return redact(obj.webhook_url) if obj.webhook_url else ""

    def get_fieldsets(self, request, obj=None):
        if self.has_change_permission(request, obj) or (obj is None and self.has_add_permission(request)):
            return self.fieldsets
        return [
            (name, dict(opts, fields=tuple("webhook_shown" if f == "webhook_url" else f for f in opts["fields"])))
            for name, opts in self.fieldsets
        ]


class DeliveryInline(admin.TabularInline):
    model = Delivery
    extra = 0
    can_delete = False
    # target_shown: a webhook URL without its secrets (last_error is stored that way).
    readonly_fields = ("kind", "channel", "target_shown", "status", "attempts", "last_error", "created_at", "sent_at")
    fields = readonly_fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ("rule", "site", "vantage", "series", "mode", "baseline", "opened_at", "closed_at")
    list_filter = ("rule", "mode", ("closed_at", admin.EmptyFieldListFilter))
    list_select_related = ("rule", "site", "vantage")
    inlines = [DeliveryInline]
    # Alerts are facts the rules established from stored results; only the rules are edited.
    readonly_fields = (
        "rule",
        "site",
        "vantage",
        "series",
        "mode",
        "baseline",
        "threshold",
        "opened_at",
        "opened_by",
        "opened_bps",
        "closed_at",
        "closed_by",
        "closed_bps",
    )

    # Rates in Mbit/s or Gbit/s like the pages, not the stored floats.
    exclude = ("baseline_bps", "threshold_bps")
    baseline = with_units("baseline_bps", "baseline")
    threshold = with_units("threshold_bps", "threshold")

    def has_add_permission(self, request):
        return False
