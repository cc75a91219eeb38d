"""What an alert notice says, and sending it by e-mail or webhook (one attempt per call; the
Celery task in tasks.py retries)."""

import json
import logging

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone

from portal.measure.units import format_bps

from . import webhooks
from .models import Delivery

log = logging.getLogger(__name__)


class DeliveryError(Exception):
    pass


def _absolute(path):
    return settings.PORTAL_URL.rstrip("/") + path


def path_url(alert):
    return _absolute(f"{reverse('measure:site', kwargs={'slug': alert.site.slug})}?vantage={alert.vantage.name}")


def payload(delivery):
    """The webhook's JSON body (and the facts the e-mail states)."""
    alert = delivery.alert
    points = alert.opened_bps if delivery.kind == "opened" else alert.closed_bps
    return {
        "event": f"alert.{delivery.kind}",
        "alert_id": alert.pk,
        "rule": alert.rule.name,
        "site": alert.site.slug,
        "vantage": alert.vantage.name,
        "mode": alert.mode,
        "series": alert.series,
        "baseline_bps": alert.baseline_bps,
        "threshold_pct": alert.rule.threshold_pct,
        "threshold_bps": alert.threshold_bps,
        "results": [
            dict(point, permalink=_absolute(reverse("measure:measurement", kwargs={"slug": point["slug"]})))
            for point in points
        ],
        "opened_at": alert.opened_at.isoformat(),
        "closed_at": alert.closed_at.isoformat() if alert.closed_at else None,
        "path_url": path_url(alert),
        "alerts_url": _absolute(reverse("alerts:list")),
    }


def email_text(delivery):
    alert = delivery.alert
    body = payload(delivery)
    rates = ", ".join(format_bps(point["bps"]) for point in body["results"])
    if delivery.kind == "opened":
        subject = (
            f"[quickprobe] {alert.vantage.name} -> {alert.site.name}: throughput below {alert.rule.threshold_pct:g} %"
        )
        lead = (
            f"The last {len(body['results'])} {alert.mode} results ({alert.series}) were below "
            f"{format_bps(alert.threshold_bps)}, {alert.rule.threshold_pct:g} % of the path's baseline "
            f"{format_bps(alert.baseline_bps)}: {rates}."
        )
    else:
        subject = f"[quickprobe] recovered: {alert.vantage.name} -> {alert.site.name}"
        lead = (
            f"The last {len(body['results'])} {alert.mode} results ({alert.series}) are back at or above "
            f"{format_bps(alert.threshold_bps)}: {rates}. The alert opened at {body['opened_at']}."
        )
    text = f"{lead}\n\nRule: {alert.rule.name}\nPath: {body['path_url']}\nAlerts: {body['alerts_url']}\n"
    return subject, text


def send_once(delivery):
    """One attempt; raises DeliveryError saying what went wrong."""
    if delivery.channel == "email":
        subject, text = email_text(delivery)
        try:
            send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, [delivery.target])
        except Exception as exc:  # SMTP errors come in many classes; all mean "try again"
            raise DeliveryError(f"e-mail to {delivery.target}: {exc}") from exc
        return
    body = json.dumps(payload(delivery)).encode()
    try:
        webhooks.post(delivery.target, body, headers={"User-Agent": "quickprobe-alerts"})
    except webhooks.WebhookError as exc:
        raise DeliveryError(str(exc)) from exc


def attempt(delivery_id):
    """Claims and tries a pending delivery. Returns "sent", "retry" or "gone"."""
    delivery = (
        Delivery.objects.select_related("alert__rule", "alert__site", "alert__vantage")
        .filter(pk=delivery_id, status="pending")
        .first()
    )
    if delivery is None:
        return "gone"
    Delivery.objects.filter(pk=delivery_id).update(attempts=delivery.attempts + 1)
    try:
        send_once(delivery)
    except DeliveryError as exc:
        Delivery.objects.filter(pk=delivery_id).update(last_error=str(exc)[:2000])
        return "retry"
    except Exception as exc:
        # Whatever else broke, the notice must be retried and then failed with a reason, not
        # left pending for ever (a garbled reply once escaped here as BadStatusLine).
        log.exception("alert delivery %s: unexpected error", delivery_id)
        reason = f"{delivery.channel} delivery hit an unexpected error: {type(exc).__name__}"
        Delivery.objects.filter(pk=delivery_id).update(last_error=reason)
        return "retry"
    Delivery.objects.filter(pk=delivery_id, status="pending").update(
        status="sent", sent_at=timezone.now(), last_error=""
    )
    return "sent"


def give_up(delivery_id):
    Delivery.objects.filter(pk=delivery_id, status="pending").update(status="failed")
