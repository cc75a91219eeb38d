"""Thin Celery task: one delivery attempt per run, retried with backoff (alerts/delivery.py)."""

import logging

from celery import shared_task
from django.conf import settings

from portal.measure.vocab import TASK_DELIVER, DeliveryStatus

log = logging.getLogger(__name__)


def send_delivery(delivery_id):
    """Queues the delivery's task on the alerts queue (called once its row is committed)."""
    deliver.apply_async(args=[delivery_id], queue=settings.ALERTS_QUEUE)


@shared_task(name=TASK_DELIVER, bind=True, max_retries=None, ignore_result=True)
def deliver(self, delivery_id):
    from . import delivery

    outcome = delivery.attempt(delivery_id)
    if outcome != "retry":
        return outcome
    if self.request.retries >= settings.ALERT_DELIVERY_RETRIES:
        delivery.give_up(delivery_id)
        log.warning("alert delivery %s failed after %d attempts", delivery_id, self.request.retries + 1)
        return DeliveryStatus.FAILED.value
    countdown = settings.ALERT_RETRY_BASE_S * (2**self.request.retries)
    raise self.retry(args=[delivery_id], countdown=countdown, queue=settings.ALERTS_QUEUE)
