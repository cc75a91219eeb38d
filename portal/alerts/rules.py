"""Judging a new result against the alert rules that watch its path.

Called once per stored result (the measure app's `result_stored` signal). Each rule reads at
most N + K results of the path from one indexed query, so the cost does not grow with the
path's history.
"""

import datetime
import logging
import statistics

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from portal.measure.models import Measurement
from portal.measure.paths import series_before, series_key
from portal.measure.vocab import DeliveryChannel, DeliveryKind, Status

from .models import Alert, AlertRule, Delivery

log = logging.getLogger(__name__)


def rules_for(measurement):
    return AlertRule.objects.filter(
        Q(site__isnull=True) | Q(site_id=measurement.site_id),
        Q(vantage__isnull=True) | Q(vantage_id=measurement.vantage_id),
        enabled=True,
        mode=measurement.mode,
    )


def evaluate(measurement_id):
    """Opens or closes alerts for a finished measurement; returns the alerts that changed."""
    measurement = (
        Measurement.objects.select_related("site", "vantage").filter(pk=measurement_id, status=Status.DONE).first()
    )
    if measurement is None:
        return []
    changed = []
    for rule in rules_for(measurement):
        alert = _judge(rule, measurement)
        if alert is not None:
            changed.append(alert)
    return changed


def _point(row):
    _pk, slug, created_at, bps = row
    return {"slug": slug, "at": created_at.isoformat(), "bps": bps}


def _judge(rule, measurement):
    series = series_key(measurement, rule.same_settings)
    since = measurement.created_at - datetime.timedelta(days=rule.baseline_days)
    k = rule.consecutive
    rows = series_before(measurement, rule.same_settings, since, rule.baseline_results + k)
    if len(rows) < k or rows[0][0] != measurement.pk:
        return None  # not enough results yet, or this one has no throughput figure
    latest = rows[:k]
    open_alert = Alert.objects.filter(
        rule=rule, site_id=measurement.site_id, vantage_id=measurement.vantage_id, series=series, closed_at__isnull=True
    ).first()
    if open_alert is not None:
        if all(row[3] >= open_alert.threshold_bps for row in latest):
            return _close(open_alert, measurement, latest)
        return None
    baseline_rows = rows[k:]
    if len(baseline_rows) < rule.baseline_results:
        return None
    baseline = statistics.median(row[3] for row in baseline_rows)
    threshold = baseline * rule.threshold_pct / 100.0
    if all(row[3] < threshold for row in latest):
        return _open(rule, measurement, series, baseline, threshold, latest)
    return None


def _open(rule, measurement, series, baseline, threshold, latest):
    try:
        with transaction.atomic():
            alert = Alert.objects.create(
                rule=rule,
                site_id=measurement.site_id,
                vantage_id=measurement.vantage_id,
                series=series,
                mode=measurement.mode,
                baseline_bps=baseline,
                threshold_bps=threshold,
                opened_by=measurement,
                opened_bps=[_point(row) for row in reversed(latest)],
            )
            _queue_notices(alert, DeliveryKind.OPENED)
    except IntegrityError:
        # Another worker stored a result of this path at the same moment and opened it first.
        return None
    log.warning("alert %s opened: %s", alert.pk, alert)
    return alert


def _close(alert, measurement, latest):
    with transaction.atomic():
        # Claim the close: only one of two concurrent evaluations sends the recovery notice.
        closed = Alert.objects.filter(pk=alert.pk, closed_at__isnull=True).update(
            closed_at=timezone.now(), closed_by=measurement, closed_bps=[_point(row) for row in reversed(latest)]
        )
        if closed != 1:
            return None
        alert.refresh_from_db()
        _queue_notices(alert, DeliveryKind.CLOSED)
    log.warning("alert %s closed: %s", alert.pk, alert)
    return alert


def _queue_notices(alert, kind):
    """Delivery rows in the alert's transaction; their tasks are sent once it commits."""
    from .tasks import send_delivery

    rule = alert.rule
    deliveries = [
        Delivery(alert=alert, kind=kind, channel=DeliveryChannel.EMAIL, target=address) for address in rule.emails
    ]
    if rule.webhook_url:
        deliveries.append(Delivery(alert=alert, kind=kind, channel=DeliveryChannel.WEBHOOK, target=rule.webhook_url))
    for delivery in Delivery.objects.bulk_create(deliveries):
        transaction.on_commit(lambda pk=delivery.pk: send_delivery(pk))
