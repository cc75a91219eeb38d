"""Alert rules (edited in the admin), the alerts they open and close, and each notice sent.

A rule watches paths (vantage -> site). For every new result of a path it compares the newest
K results with the path's baseline, the median of the N results before them (within
`baseline_days`); K in a row below `threshold_pct` % of the baseline opens an alert, K in a
row back at or above the alert's threshold closes it with a recovery notice.
"""

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, validate_email
from django.db import models
from django.db.models import Q
from django.utils import timezone

from portal.measure.models import Measurement, Site, Vantage
from portal.measure.vocab import DeliveryChannel, DeliveryKind, DeliveryStatus, Mode

from .webhooks import redact, validate_webhook_url


def parse_emails(text):
    """Addresses separated by commas, spaces or new lines."""
    return [part for part in text.replace(",", " ").split() if part]


def validate_email_list(text):
    bad = []
    for address in parse_emails(text):
        try:
            validate_email(address)
        except ValidationError:
            bad.append(address)
    if bad:
        raise ValidationError(f"not an e-mail address: {', '.join(bad)}; separate addresses with commas or new lines.")


class AlertRule(models.Model):
    name = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True)
    site = models.ForeignKey(
        Site, null=True, blank=True, on_delete=models.CASCADE, related_name="+", help_text="Empty: every site."
    )
    vantage = models.ForeignKey(
        Vantage, null=True, blank=True, on_delete=models.CASCADE, related_name="+", help_text="Empty: every vantage."
    )
    mode = models.CharField(
        max_length=8,
        choices=Mode.choices,
        default=Mode.QUICK,
        help_text="Only results of this mode are compared (quick answers and full-length runs differ by design).",
    )
    same_settings = models.BooleanField(
        default=True,
        help_text="Compare a result only with earlier results of the same streams, window and "
        "congestion control (a sweep mixes settings whose rates differ by design).",
    )
    baseline_results = models.PositiveSmallIntegerField(
        "baseline: last N results",
        default=10,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text="The baseline is the median of the N results before the ones being judged; no alert until "
        "N exist within the window.",
    )
    baseline_days = models.PositiveSmallIntegerField(
        "baseline window (days)", default=14, validators=[MinValueValidator(1), MaxValueValidator(365)]
    )
    consecutive = models.PositiveSmallIntegerField(
        "K results in a row",
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(50)],
        help_text="An alert opens after K results in a row below the threshold, and closes after K in a row "
        "back at or above it: one bad (or good) result alone changes nothing.",
    )
    threshold_pct = models.FloatField(
        "threshold (% of baseline)", default=70.0, validators=[MinValueValidator(1.0), MaxValueValidator(100.0)]
    )
    email_to = models.TextField(
        "e-mail to",
        blank=True,
        validators=[validate_email_list],
        help_text="Addresses separated by commas or new lines; empty: no e-mail.",
    )
    webhook_url = models.URLField(
        blank=True,
        max_length=500,
        validators=[validate_webhook_url],
        help_text="Receives a JSON POST for every alert and recovery; empty: none. http:// or https:// to a "
        "publicly routable host; redirects are not followed.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def emails(self):
        return parse_emails(self.email_to)


class Alert(models.Model):
    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    vantage = models.ForeignKey(Vantage, on_delete=models.CASCADE, related_name="+")
    # "any" or e.g. "P4 w256K cubic": the results this alert compares (see rules.series_key).
    series = models.CharField(max_length=64)
    mode = models.CharField(max_length=8, choices=Mode.choices)
    # Frozen when the alert opens: a path stuck at a low rate must not drag its own baseline
    # down until the alert "recovers" without anything getting better.
    baseline_bps = models.FloatField()
    threshold_bps = models.FloatField()
    opened_at = models.DateTimeField(default=timezone.now)
    opened_by = models.ForeignKey(Measurement, null=True, on_delete=models.SET_NULL, related_name="+")
    opened_bps = models.JSONField(default=list, help_text="The K results that opened it, oldest first.")
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(Measurement, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    closed_bps = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-opened_at"]
        indexes = [models.Index(fields=["closed_at", "-opened_at"], name="alert_closed_opened")]
        constraints = [
            # Two workers storing results of one path at once must not open the alert twice.
            models.UniqueConstraint(
                fields=["rule", "site", "vantage", "series"],
                condition=Q(closed_at__isnull=True),
                name="one_open_alert_per_rule_path_series",
            ),
        ]

    def __str__(self):
        state = "open" if self.closed_at is None else "closed"
        return f"{self.rule}: {self.vantage} -> {self.site} ({self.series}, {state})"

    @property
    def is_open(self):
        return self.closed_at is None


class Delivery(models.Model):
    """One notice (alert opened or closed) to one channel; the Celery task fills in the outcome."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    kind = models.CharField(max_length=8, choices=DeliveryKind.choices)
    channel = models.CharField(max_length=8, choices=DeliveryChannel.choices)
    target = models.TextField()
    status = models.CharField(max_length=8, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self):
        return f"{self.get_kind_display()} by {self.channel} to {self.target_shown}: {self.status}"

    @property
    def target_shown(self):
        """The target as pages and the admin show it: a webhook URL without its secrets."""
        return redact(self.target) if self.channel == "webhook" else self.target
