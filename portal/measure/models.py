"""The portal's tables: sites (iperf servers), vantages (prober hosts), measurements with their
results and traces, and API tokens. Statuses, failure codes and the result columns are
declared in vocab.py."""

import hashlib
import json
import secrets
import zlib
import zoneinfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models, transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from .units import format_seconds, format_us
from .vocab import (
    FINISHED_STATUSES,
    QUICK_HOLDS,
    RESULT_FIELDS,
    Mode,
    Protocol,
    Status,
    public_failure_reason,
    vantage_queue,
)

vantage_name_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]{0,62}$",
    "A vantage name is 1-63 lower-case letters, digits, '-' or '_', starting with a letter or digit "
    "(it names the Celery queue vantage.<name>).",
)


def validate_time_zone(name):
    if name not in zoneinfo.available_timezones():
        raise ValidationError(
            f"{name!r} is not an IANA time zone name: use one like UTC, Europe/Berlin or America/Los_Angeles."
        )


def new_measurement_slug():
    # 9 random bytes -> 12 URL-safe characters, 72 bits: permalinks cannot be enumerated. Never a
    # leading '-': in a CSV a spreadsheet reads that as a formula (the export escapes it, which
    # then differs from the slug), in a shell as an option.
    while True:
        slug = secrets.token_urlsafe(9)
        if not slug.startswith("-"):
            return slug


class Site(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=64, unique=True)
    host = models.CharField(max_length=255, help_text="Name or address of the host running iperf3 -s / iperf -s.")
    port = models.PositiveIntegerField(default=5201, validators=[MinValueValidator(1), MaxValueValidator(65535)])
    protocol = models.CharField(max_length=8, choices=Protocol.choices, default=Protocol.IPERF3)
    location = models.CharField(max_length=200, blank=True)
    notes = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Bumped in the same transaction as any change to the site or its measurements: the key of
    # everything cached about the site (pagecache.py), so a cached page is never stale.
    data_version = models.BigIntegerField(default=0, editable=False)
    # The site's own clock: the time-of-day analysis is about the hours people there work.
    time_zone = models.CharField(
        max_length=64,
        default="UTC",
        validators=[validate_time_zone],
        help_text="IANA time zone name of the site, e.g. Europe/Berlin; the time-of-day charts use it.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        if not self._state.adding and kwargs.get("update_fields") is None:
            # Writing back the version this instance was read with could return the site to a
            # version whose cached pages predate the change.
            kwargs["update_fields"] = [
                f.name for f in self._meta.concrete_fields if not f.primary_key and f.name != "data_version"
            ]
        with transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)
            bump_versions([self.pk])

    def get_absolute_url(self):
        return reverse("measure:site", kwargs={"slug": self.slug})

    def clean(self):
        from .hosts import check_site_host

        if self.host:
            try:
                check_site_host(self.host)
            except ValidationError as exc:
                raise ValidationError({"host": exc.messages}) from None


def bump_versions(site_ids=None):
    """New data versions for these sites (all sites if None); call inside the writing transaction."""
    sites = Site.objects.all() if site_ids is None else Site.objects.filter(pk__in=set(site_ids))
    sites.update(data_version=F("data_version") + 1)


class Vantage(models.Model):
    name = models.CharField(max_length=63, unique=True, validators=[vantage_name_validator])
    description = models.CharField(max_length=200, blank=True)
    kernel = models.CharField(max_length=100, blank=True)
    congestion_controls = models.JSONField(default=list, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    # Two tests from one host share its uplink and CPU and measure each other, so one at a
    # time unless an admin knows the uplink has room (portal/launch.py, runner.claim).
    max_concurrent_tests = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(16)],
        help_text="Throughput tests this vantage runs at once (1-16). More than 1 only where its uplink and "
        "CPU have room for several; its worker picks a change up when it restarts.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def queue_name(self):
        return vantage_queue(self.name)

    def save(self, *args, **kwargs):
        # Site pages show vantage names: a rename must not be hidden by a cached page.
        with transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)
            bump_versions()


# A quick answer whose interval's wider side is more than this % of the figure is called wide on
# its permalink, with the prober's reason. 10 % is the bar issue 24 sets for an answer on a LAN
# (item 6) and twice the median half-width it targets (5 %); past it, the interval spans steps
# that matter when reading a path (say 100 vs 120 Mbit/s), so the figure alone would mislead.
QUICK_WIDE_PCT = 10.0

# How a quick test's figure stands to quick mode (Measurement.quick_mark_of: the one rule every
# page marks a figure by; templates/measure/measurement.html#quick_mark has the words):
# converged (quick mode's answer, its interval within the tolerance), deadline (its answer at
# the deadline, with the interval the evidence allows), estimate (its answer, from a prober
# before the converging window said either), fell_back (it did not converge and was asked to
# measure until converged: the full run's average), not_entered (slow-start never ended: the
# whole run's average).
QUICK_MARKS = ("converged", "deadline", "estimate", "fell_back", "not_entered")
# The marks whose figure is quick_bps (quick mode answered); the others show the full run's.
QUICK_ANSWERS = frozenset({"converged", "deadline", "estimate"})
# Site hosts that are this machine: no cross traffic can share such a path, so the prober's
# "(cross traffic?)" guess gives way to what moves the rate there: the host's CPUs.
LOOPBACK_HOSTS = frozenset({"localhost", "::1", "ip6-localhost"})
LOOPBACK_LEVELS = " (on loopback: CPU load on the host)"

# Measurement columns that no page shows: writing only these (the running test's heartbeat,
# every HEARTBEAT_TEST_S) need not make the site's cached pages new.
UNSHOWN_FIELDS = frozenset({"heartbeat_at"})


class MeasurementQuerySet(models.QuerySet):
    """Every write of measurements through the ORM bumps their sites' data versions in the same
    transaction (pagecache.py explains why): freshness by construction, whoever writes."""

    def _sites(self):
        return list(self.order_by().values_list("site_id", flat=True).distinct())

    def update(self, **kwargs):
        if set(kwargs) <= UNSHOWN_FIELDS:
            return super().update(**kwargs)
        with transaction.atomic(using=self.db, savepoint=False):
            # Writers select rows by pk (or a status that only they change), so the rows read
            # here are the rows updated below.
            site_ids = self._sites()
            count = super().update(**kwargs)
            if count:
                bump_versions(site_ids)
        return count

    update.alters_data = True

    def delete(self):
        with transaction.atomic(using=self.db, savepoint=False):
            site_ids = self._sites()
            deleted = super().delete()
            bump_versions(site_ids)
        return deleted

    delete.alters_data = True

    def bulk_create(self, objs, *args, **kwargs):
        with transaction.atomic(using=self.db, savepoint=False):
            created = super().bulk_create(objs, *args, **kwargs)
            bump_versions(obj.site_id for obj in created)
        return created

    def with_longer_run(self):
        """Each row with the slug and status of its newest "measure longer" full run
        (longer_run_slug / longer_run_status, None without one) and the quick test it measures
        longer (longer_of), in the row's own query: the permalink stays one query."""
        newest = Measurement.objects.filter(longer_of=OuterRef("pk")).order_by("-created_at")
        return self.select_related("longer_of").annotate(
            longer_run_slug=Subquery(newest.values("slug")[:1]),
            longer_run_status=Subquery(newest.values("status")[:1]),
        )


class Measurement(models.Model):
    objects = MeasurementQuerySet.as_manager()

    slug = models.SlugField(max_length=16, unique=True, default=new_measurement_slug, editable=False)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="measurements")
    vantage = models.ForeignKey(Vantage, on_delete=models.PROTECT, related_name="measurements")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="measurements"
    )
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.QUICK)
    duration_s = models.PositiveSmallIntegerField(default=10)
    streams = models.PositiveSmallIntegerField(default=1)
    window_bytes = models.PositiveIntegerField(null=True, blank=True)
    congestion = models.CharField(max_length=16, blank=True)

    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    failure_code = models.CharField(max_length=32, blank=True)
    failure_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # The task's bookkeeping (dispatch.py sends it, reaper.py's watchdog sends a lost one again):
    # when the current task message was sent (empty: not sent, the broker was unreachable), when
    # it is due to start (at once, or after a retry's countdown), and how often the watchdog had
    # to send a lost one again.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(null=True, blank=True)
    dispatch_count = models.PositiveSmallIntegerField(default=0)
    # Issue 24: quick mode answers at its deadline unless asked to go on until its interval
    # converges (the prober's --until-converged: the full -t run is then the result).
    until_converged = models.BooleanField(default=False)
    # The quick test this full-mode test measures longer ("measure longer" on its permalink),
    # so each permalink links to the other. A deleted quick test leaves the full one standing.
    longer_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="longer_runs", editable=False
    )

    # The prober's whole `result` event; its figures are also copied into the columns declared
    # in vocab.RESULT_FIELDS (added below) so pages and CSV can filter and sort without it.
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["site", "-created_at"], name="measurement_site_created"),
            models.Index(fields=["status", "heartbeat_at"], name="measurement_status_heartbeat"),
            models.Index(fields=["status", "due_at"], name="measurement_status_due"),
            models.Index(fields=["created_at"], name="measurement_created"),
        ]
        constraints = [
            # One test at a time against a target, across all vantages: two streams of traffic
            # to one server would each measure half the path.
            models.UniqueConstraint(fields=["site"], condition=Q(status=Status.RUNNING), name="one_running_per_site"),
        ]

    def __str__(self):
        return f"{self.slug} {self.site.slug} from {self.vantage.name} ({self.status})"

    def get_absolute_url(self):
        return reverse("measure:measurement", kwargs={"slug": self.slug})

    def save(self, *args, **kwargs):
        with transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)
            bump_versions([self.site_id])

    def delete(self, *args, **kwargs):
        with transaction.atomic(using=kwargs.get("using")):
            deleted = super().delete(*args, **kwargs)
            bump_versions([self.site_id])
        return deleted

    @property
    def quick_answer_taken(self):
        """Whether quick_bps is the result: the prober's quick_answered (issue 24: it converged,
        or answered at its deadline); rows from provers before it (quick_answered null) read
        quick_converged, which then meant the same. None where neither says."""
        return self.quick_converged if self.quick_answered is None else self.quick_answered

    @staticmethod
    def quick_mark_of(mode, quick_mode_entered, quick_answered, quick_converged):
        """The one rule for how a test's figure stands to quick mode (a QUICK_MARKS key, "" for
        full and validate tests): from the row's columns, so pages that read values() rows
        (sweep cells, the overview, the grid, the CSV) mark a figure as the permalink does."""
        if mode != Mode.QUICK:
            return ""
        if not quick_mode_entered:
            return "not_entered"
        taken = quick_converged if quick_answered is None else quick_answered
        if taken is False:
            return "fell_back"
        if quick_converged is None:
            return "estimate"
        return "converged" if quick_converged else "deadline"

    @property
    def quick_mark(self):
        return self.quick_mark_of(self.mode, self.quick_mode_entered, self.quick_answered, self.quick_converged)

    @property
    def saving(self):
        """What quick mode saved against a run of this test's own -t (paths.quick_saving, the
        one definition); None for full and validate tests and unfinished ones."""
        from .paths import quick_saving  # paths imports this module

        if self.mode != Mode.QUICK or self.status != Status.DONE or self.elapsed_s is None:
            return None
        answered = self.quick_mark in QUICK_ANSWERS
        return quick_saving(answered, self.duration_s, self.elapsed_s, self.bytes_sent, self.headline_bps)

    @property
    def site_is_loopback(self):
        host = self.site.host.strip().lower()
        return host in LOOPBACK_HOSTS or host.startswith("127.")

    def _path_words(self, text):
        # The prober guesses "cross traffic?" when the rate changed level with the link full;
        # on a loopback site nothing else shares the path, and the bottleneck is the CPU: the
        # scheduler moves the rate by 10-40 % from one second to the next (README, "Loopback").
        if text and self.site_is_loopback:
            return text.replace(" (cross traffic?)", LOOPBACK_LEVELS)
        return text

    @property
    def quick_bound_words(self):
        """quick_bound_text in words that fit the path."""
        return self._path_words(self.quick_bound_text)

    @property
    def headline_bps(self):
        # Same rule as paths.headline_expr: an estimate that was not the answer (the run fell
        # back to the full -t) is not the result.
        if self.quick_mode_entered and self.quick_answer_taken is not False:
            return self.quick_bps
        return self.cumulative_bps

    @property
    def shows_error_bar(self):
        """The headline is a quick answer (converged, or answered at its deadline) with its error bar."""
        return bool(
            self.quick_mode_entered
            and self.quick_answer_taken is not False
            and self.quick_ci_pct is not None
            and self.mode != Mode.FULL
        )

    @property
    def headline_basis(self):
        """What the headline figure is, in words (the permalink's line under it)."""
        if self.shows_error_bar:
            if self.quick_converged:
                return format_html("quick-mode estimate, converged in {}", format_seconds(self.elapsed_s))
            return "quick-mode estimate, 95 % interval"
        if self.quick_fell_back:
            # Our own words, no stored text: the apostrophe needs no escaping.
            return mark_safe("quick mode did not converge: the full run's average")
        if self.quick_mode_entered:
            return "quick-mode estimate"
        if self.mode == Mode.QUICK:
            return "quick mode not entered: whole-run average"
        return f"{self.mode} run average"

    @property
    def share_description(self):
        """The finished result in one sentence, for link previews (OpenGraph)."""
        where = format_html("from {} to {} ({})", self.vantage.name, self.site.name, self.site.host)
        if self.mode == Mode.QUICK and self.quick_mode_entered:
            how = format_html(
                "Quick-mode TCP throughput {}: slow-start ended at {} ({}), measured in {} instead of {} s.",
                where,
                format_seconds(self.slow_start_end_s),
                self.rule,
                format_seconds(self.elapsed_s),
                floatformat(self.full_time_s, 0),
            )
        else:
            plural = "" if self.streams == 1 else "s"
            how = format_html(
                "{}-length TCP throughput {} over {}, {} stream{}.",
                self.mode[:1].upper() + self.mode[1:],
                where,
                format_seconds(self.elapsed_s),
                self.streams,
                plural,
            )
        retransmits = "?" if self.retransmits is None else self.retransmits
        return format_html("{} RTT {}, {} retransmits.", how, format_us(self.rtt_us), retransmits)

    @property
    def quick_fell_back(self):
        """Quick mode was entered but its estimate is not the result: the full run is."""
        return bool(self.quick_mode_entered and self.quick_answer_taken is False)

    @property
    def quick_interval(self):
        """(lo, hi) of the quick answer's 95 % interval in bit/s, or None when unknown. Rows from
        provers before the asymmetric interval have only quick_ci_pct: quick_bps +- that."""
        if self.quick_lo_bps is not None and self.quick_hi_bps is not None:
            return self.quick_lo_bps, self.quick_hi_bps
        if self.quick_bps is None or self.quick_ci_pct is None:
            return None
        half = self.quick_bps * self.quick_ci_pct / 100.0
        return self.quick_bps - half, self.quick_bps + half

    @property
    def quick_half_width_pct(self):
        """The wider side of the interval in % of quick_bps (as the prober's quick_ci_pct)."""
        interval = self.quick_interval
        if interval is None or not self.quick_bps:
            return None
        lo, hi = interval
        return 100.0 * max(hi - self.quick_bps, self.quick_bps - lo) / self.quick_bps

    @property
    def quick_interval_wide(self):
        """The interval is too wide to read as one figure (QUICK_WIDE_PCT says why)."""
        pct = self.quick_half_width_pct
        return pct is not None and pct > QUICK_WIDE_PCT

    @property
    def offers_longer(self):
        """A finished quick test whose quick answer is the result can be measured longer (a
        full-mode test with the same parameters); one that fell back already ran the full -t."""
        return (
            self.status == Status.DONE
            and self.mode == Mode.QUICK
            and bool(self.quick_mode_entered)
            and self.quick_answer_taken is not False
        )

    @property
    def quick_held_by_text(self):
        """Why a quick window that did not converge stayed open, in words ("" when not known)."""
        if self.quick_converged is not False or not self.quick_held_by:
            return ""
        return self._path_words(QUICK_HOLDS.get(self.quick_held_by, self.quick_held_by))

    @property
    def is_finished(self):
        return self.status in FINISHED_STATUSES

    @property
    def public_failure_reason(self):
        return public_failure_reason(self.failure_code)

    def failure_detail_visible_to(self, user):
        """The full failure reason is for staff and for whoever requested the test."""
        return bool(user.is_authenticated and (user.is_staff or user.pk == self.requested_by_id))

    @property
    def is_done(self):
        return self.status == Status.DONE

    @property
    def is_failed(self):
        return self.status == Status.FAILED


# The result columns, one per vocab.RESULT_FIELDS entry (the one declaration of them).
for _field in RESULT_FIELDS:
    Measurement.add_to_class(_field.name, _field.model_field())


class MeasurementTrace(models.Model):
    """The per-sample trace, zlib-compressed JSON: a 60 s, 16-stream trace at 20 ms is ~3000
    samples x 16 streams, a few hundred KB as JSON and a few tens after compression. JSON keeps
    floats exact (repr round-trips) and allows the nulls ssthresh needs."""

    measurement = models.OneToOneField(Measurement, on_delete=models.CASCADE, related_name="trace", primary_key=True)
    data = models.BinaryField()
    sample_count = models.PositiveIntegerField(default=0)
    stream_count = models.PositiveSmallIntegerField(default=0)

    @staticmethod
    def pack(trace_dict):
        return zlib.compress(json.dumps(trace_dict, separators=(",", ":"), allow_nan=False).encode(), 6)

    @classmethod
    def from_dict(cls, measurement, trace_dict):
        return cls(
            measurement=measurement,
            data=cls.pack(trace_dict),
            sample_count=len(trace_dict.get("t", [])),
            stream_count=len(trace_dict.get("streams", [])),
        )

    def to_dict(self):
        return json.loads(zlib.decompress(bytes(self.data)))


class ApiToken(models.Model):
    """A bearer token for the API. Only its SHA-256 is stored: a leaked database does not leak
    working tokens (the token has 256 random bits, so a plain hash is enough, no KDF)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8, help_text="First characters of the token, to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.user} {self.prefix}..."

    @staticmethod
    def hash_key(key):
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def issue(cls, user):
        key = secrets.token_urlsafe(32)
        cls.objects.create(user=user, key_hash=cls.hash_key(key), prefix=key[:8])
        return key


class Quota(models.Model):
    """Limits on one user's, or one group's, test requests (portal/measure/dispatch.py says how
    they apply). A blank limit is no limit; users without a row get the QUOTA_* settings."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="quota"
    )
    group = models.OneToOneField("auth.Group", null=True, blank=True, on_delete=models.CASCADE, related_name="quota")
    tests_per_hour = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tests requested in any 60 minutes. Blank: no limit."
    )
    max_pending = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tests queued or running at once. Blank: no limit."
    )
    test_seconds_per_day = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Seconds of testing in any 24 hours (requested duration until a test "
        "ends, then the time it ran). Blank: no limit.",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, group__isnull=True) | Q(user__isnull=True, group__isnull=False),
                name="quota_for_user_or_group",
            ),
        ]

    def __str__(self):
        return f"quota of {self.user or self.group}"

    def clean(self):
        if (self.user_id is None) == (self.group_id is None):
            raise ValidationError("A quota is for one user or for one group: choose exactly one.")
