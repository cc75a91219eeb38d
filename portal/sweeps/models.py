import itertools

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.urls import reverse
from django.utils import timezone

# A sweep runs the same tests as the request form: the same duration bounds.
from portal.measure.forms import DURATION_RANGE
from portal.measure.models import Measurement, Site, Vantage, new_measurement_slug
from portal.measure.units import format_duration
from portal.measure.vocab import Mode, SkipCode, SweepRunStatus, SweepTrigger

from . import spec


class Sweep(models.Model):
    """A parameter matrix (modes x windows x streams x congestion controls) run against sites
    from vantages on a schedule. Its beat entry (a django-celery-beat PeriodicTask) follows
    every save, so an edit in the admin takes effect without restarting beat."""

    name = models.CharField(max_length=100, unique=True, help_text="Unique; `manage.py sweep run NAME` uses it.")
    all_sites = models.BooleanField(default=True, help_text="Every enabled site at the time of each run.")
    sites = models.ManyToManyField(Site, blank=True, related_name="+", help_text="Used when 'all sites' is off.")
    all_vantages = models.BooleanField(default=True, help_text="Every enabled vantage at the time of each run.")
    vantages = models.ManyToManyField(
        Vantage, blank=True, related_name="+", help_text="Used when 'all vantages' is off."
    )
    modes = models.JSONField(default=list)
    windows = models.JSONField(default=list, help_text="Bytes; null is the kernel's default.")
    streams = models.JSONField(default=list)
    congestion_controls = models.JSONField(default=list, help_text="'' is each vantage's default.")
    duration_s = models.PositiveSmallIntegerField(
        default=10, validators=[MinValueValidator(DURATION_RANGE[0]), MaxValueValidator(DURATION_RANGE[1])]
    )
    # Issue 24: each quick test answers at its deadline (off), or goes on to the full -t when
    # its estimate has not converged by then (on: the prober's --until-converged).
    until_converged = models.BooleanField(
        default=False,
        help_text="Quick tests: measure until converged (may run the full -t) instead of answering at the deadline.",
    )
    every_s = models.PositiveIntegerField(null=True, blank=True)
    cron = models.CharField(max_length=100, blank=True)
    slip_s = models.PositiveIntegerField(default=0, validators=[MaxValueValidator(spec.SLIP_MAX_S)])
    daily_budget_bytes = models.BigIntegerField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        from . import schedule

        super().save(*args, **kwargs)
        schedule.sync(self)

    def settings_matrix(self):
        """Every (mode, window, streams, congestion) the sweep runs, in a stable order."""
        return list(
            itertools.product(
                self.modes or [Mode.QUICK.value],
                self.windows or [None],
                self.streams or [1],
                self.congestion_controls or [""],
            )
        )

    @property
    def schedule_text(self):
        if self.every_s:
            return f"every {format_duration(self.every_s)}"
        if self.cron:
            return f"cron {self.cron} (UTC)"
        return "not scheduled"


class SweepRun(models.Model):
    """One firing of a sweep. Its cells are planned all at once when it starts."""

    slug = models.SlugField(max_length=16, unique=True, default=new_measurement_slug, editable=False)
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="runs")
    trigger = models.CharField(max_length=8, choices=SweepTrigger.choices)
    status = models.CharField(max_length=10, choices=SweepRunStatus.choices, default=SweepRunStatus.SCHEDULED)
    created_at = models.DateTimeField(default=timezone.now)
    # The slot plus the sweep's random start offset (its slip).
    starts_at = models.DateTimeField(default=timezone.now)
    planned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.sweep.name} {self.created_at:%Y-%m-%d %H:%M} ({self.slug})"

    def get_absolute_url(self):
        return reverse("sweeps:run", kwargs={"slug": self.slug})


class SweepCell(models.Model):
    """site x vantage x setting of one run: a measurement, or the reason there is none."""

    run = models.ForeignKey(SweepRun, on_delete=models.CASCADE, related_name="cells")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    vantage = models.ForeignKey(Vantage, on_delete=models.CASCADE, related_name="+")
    mode = models.CharField(max_length=8)
    window_bytes = models.PositiveIntegerField(null=True, blank=True)
    streams = models.PositiveSmallIntegerField()
    congestion = models.CharField(max_length=16, blank=True)
    measurement = models.OneToOneField(
        Measurement, null=True, blank=True, on_delete=models.SET_NULL, related_name="sweep_cell"
    )
    skip_code = models.CharField(max_length=32, blank=True, choices=SkipCode.choices)
    skip_reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["run", "site", "vantage"], name="sweepcell_run_path")]


@receiver(post_delete, sender=Sweep, dispatch_uid="sweeps-remove-beat-entry")
def _remove_beat_entry(sender, instance, **kwargs):
    # Also on the admin's bulk delete, which never calls Sweep.delete().
    from . import schedule

    schedule.remove(instance)
