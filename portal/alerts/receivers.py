"""What alerts does when measure tells it something (connected in apps.AlertsConfig.ready)."""

import logging

from .models import Alert

log = logging.getLogger(__name__)


def judge_result(sender, measurement_id, **kwargs):
    from .rules import evaluate

    try:
        evaluate(measurement_id)
    except Exception:
        # The result is stored and committed; a broken rule must not fail the worker's task.
        log.exception("alert rules failed on measurement %s", measurement_id)


def paths_in_alert():
    """{(site_id, vantage_id): "in alert: rule, ..."} for every open alert."""
    flags = {}
    for site_id, vantage_id, rule in Alert.objects.filter(closed_at__isnull=True).values_list(
        "site_id", "vantage_id", "rule__name"
    ):
        key = (site_id, vantage_id)
        flags[key] = f"{flags[key]}, {rule}" if key in flags else f"in alert: {rule}"
    return flags
