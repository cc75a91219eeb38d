"""Creating measurements: the one path from a valid form (page or API) to a queued task.

No maintenance here: failing abandoned rows and resending lost tasks is the housekeeping
worker's (tasks.reap, sent by beat every REAPER_INTERVAL_S), so a request never pays for it."""

import logging

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import OperationalError, transaction
from psycopg.errors import DeadlockDetected

from . import quotas
from .dispatch import queue_measurement
from .forms import MeasurementForm
from .models import Measurement, Site
from .units import format_window
from .vocab import Mode, Status

log = logging.getLogger(__name__)


def request_measurement(form_data, user, longer_of=None):
    """form_data: a MeasurementForm or the raw data for one (page POST, API JSON). Invalid
    data raises django.core.exceptions.ValidationError carrying the form's messages; a request
    over the user's limits raises quotas.QuotaExceeded. longer_of: the quick test this one
    measures longer (request_longer_run)."""
    if isinstance(form_data, MeasurementForm):
        form = form_data
    else:
        form = MeasurementForm(data=form_data)
    if not form.is_valid():
        raise ValidationError(form.errors.as_data())
    requester = user if user is not None and user.is_authenticated else None
    fields = form.measurement_fields()
    if longer_of is not None:
        fields["longer_of"] = longer_of
    for attempt in range(DEADLOCK_ATTEMPTS):
        try:
            measurement = _queue_for(requester, fields)
            break
        except OperationalError as exc:
            # A worker writing the same site's rows (its data version) can pick this
            # transaction as PostgreSQL's deadlock victim; nothing was stored, so ask again.
            if not isinstance(exc.__cause__, DeadlockDetected) or attempt == DEADLOCK_ATTEMPTS - 1:
                raise
            log.warning("deadlock queueing a test of %s; trying again", fields["site"].slug)
    log.info("queued measurement %s of %s from %s", measurement.slug, measurement.site.slug, measurement.vantage.name)
    return measurement


DEADLOCK_ATTEMPTS = 3


def _queue_for(requester, fields):
    """The row and its task together, inside the user's limits: the task is sent once the row
    is committed (dispatch.py)."""
    with transaction.atomic():
        if requester is not None:
            # One request at a time per user: two sent at once must not both fit the last slot.
            get_user_model().objects.select_for_update().filter(pk=requester.pk).exists()
        if fields.get("longer_of") is not None:
            # Two clicks (or the owner and staff at once) get one full run: the quick row is
            # locked while its longer runs are looked at. Nothing else writes a finished row.
            quick = Measurement.objects.select_for_update().get(pk=fields["longer_of"].pk)
            pending = quick.longer_runs.exclude(status=Status.FAILED).order_by("-created_at").first()
            if pending is not None:
                return pending
        if requester is not None:
            quotas.check(requester, fields["duration_s"])
        # The site row first, as the worker's writes take it (its data version), so the two
        # lock in the same order.
        Site.objects.select_for_update().filter(pk=fields["site"].pk).exists()
        return queue_measurement(requested_by=requester, **fields)


def request_longer_run(quick, user):
    """ "Measure longer": the full-mode test of a quick test's parameters (site, vantage,
    duration, streams, window, congestion), linked to it, through the same validation, quotas
    and queue as any request. A full run of it already queued, running or done is returned
    instead of a second one. Raises ValidationError / QuotaExceeded as request_measurement."""
    data = {
        "site": quick.site.slug,
        "vantage": quick.vantage.name,
        "mode": Mode.FULL.value,
        "duration_s": str(quick.duration_s),
        "streams": str(quick.streams),
        "window": format_window(quick.window_bytes),
        "congestion": quick.congestion,
    }
    return request_measurement(data, user, longer_of=quick)
