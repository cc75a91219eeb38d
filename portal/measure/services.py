"""Creating measurements: the one path from a valid form (page or API) to a queued task."""
import logging

from django.core.exceptions import ValidationError
from django.db import transaction

from portal.celery import app

from . import reaper
from .forms import MeasurementForm
from .models import Measurement
from .vocab import TASK_RUN

log = logging.getLogger(__name__)


def enqueue(measurement):
    app.send_task(TASK_RUN, args=[measurement.pk], queue=measurement.vantage.queue_name)


def request_measurement(form_data, user):
    """form_data: a MeasurementForm or the raw data for one (page POST, API JSON). Invalid
    data raises django.core.exceptions.ValidationError carrying the form's messages."""
    if isinstance(form_data, MeasurementForm):
        form = form_data
    else:
        form = MeasurementForm(data=form_data)
    if not form.is_valid():
        raise ValidationError(form.errors.as_data())
    # Opportunistic: a user asking for a test is a good moment to clear abandoned rows.
    reaper.reap()
    measurement = Measurement(requested_by=user if user is not None and user.is_authenticated else None,
                              **form.measurement_fields())
    measurement.save()
    # The worker must find the row, so the task is sent only once it is committed.
    transaction.on_commit(lambda: enqueue(measurement))
    log.info("queued measurement %s of %s from %s", measurement.slug, measurement.site.slug, measurement.vantage.name)
    return measurement
