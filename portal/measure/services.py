"""Creating measurements: the one path from a valid form (page or API) to a queued task."""
import logging

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from portal.celery import app

from . import quotas, reaper
from .forms import MeasurementForm
from .models import Measurement
from .vocab import TASK_RUN

log = logging.getLogger(__name__)


def enqueue(measurement):
    app.send_task(TASK_RUN, args=[measurement.pk], queue=measurement.vantage.queue_name)


def request_measurement(form_data, user):
    """form_data: a MeasurementForm or the raw data for one (page POST, API JSON). Invalid
    data raises django.core.exceptions.ValidationError carrying the form's messages; a request
    over the user's limits raises quotas.QuotaExceeded."""
    if isinstance(form_data, MeasurementForm):
        form = form_data
    else:
        form = MeasurementForm(data=form_data)
    if not form.is_valid():
        raise ValidationError(form.errors.as_data())
    # Opportunistic: a user asking for a test is a good moment to clear abandoned rows.
    reaper.reap()
    requester = user if user is not None and user.is_authenticated else None
    measurement = Measurement(requested_by=requester, **form.measurement_fields())
    with transaction.atomic():
        if requester is not None:
            # One request at a time per user: two sent at once must not both fit the last slot.
            get_user_model().objects.select_for_update().filter(pk=requester.pk).exists()
            quotas.check(requester, measurement.duration_s)
        measurement.save()
    # The worker must find the row, so the task is sent only once it is committed.
    transaction.on_commit(lambda: enqueue(measurement))
    log.info("queued measurement %s of %s from %s", measurement.slug, measurement.site.slug, measurement.vantage.name)
    return measurement
