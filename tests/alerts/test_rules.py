"""Alert rules judged on stored results: K bad results in a row open one alert, K good ones
close it, one outlier changes nothing; deliveries are queued for each channel."""

import datetime as dt

import pytest
from django.utils import timezone

from portal.alerts.models import Alert, AlertRule, Delivery
from portal.alerts.rules import evaluate
from tests import factories

pytestmark = pytest.mark.django_db

T0 = timezone.now() - dt.timedelta(days=1)


def _result(site, vantage, i, bps, **overrides):
    created = T0 + dt.timedelta(minutes=10 * i)
    m = factories.make_done_measurement(
        site=site,
        vantage=vantage,
        created_at=created,
        finished_at=created,
        result=factories.sample_result_event(quick_bps=bps, cumulative_bps=bps),
        **overrides,
    )
    return m


def _feed(site, vantage, rates, start=0, **overrides):
    """Stores results with these rates, judging each as the worker's signal would."""
    changed = []
    for i, bps in enumerate(rates, start=start):
        changed += evaluate(_result(site, vantage, i, bps, **overrides).pk)
    return changed


def _rule(**overrides):
    fields = {
        "name": "drop",
        "baseline_results": 4,
        "consecutive": 2,
        "threshold_pct": 70.0,
        "email_to": "noc@example.org, ops@example.org",
        "webhook_url": "http://127.0.0.1:9/hook",
    }
    fields.update(overrides)
    return AlertRule.objects.create(**fields)


def test_rule_opens_after_k_bad_results_not_one(site, vantage):
    _rule()
    # Single bad results between good ones never make K = 2 in a row.
    assert _feed(site, vantage, [100e6, 110e6, 90e6, 100e6, 100e6, 40e6, 100e6, 105e6]) == []
    changed = _feed(site, vantage, [40e6, 30e6], start=8)
    assert [a.is_open for a in changed] == [True]
    alert = Alert.objects.get()
    # The baseline is the median of the 4 results before the 2 judged (the isolated 40 included):
    # 105, 100, 40, 100 -> 100.
    assert alert.baseline_bps == pytest.approx(100e6)
    assert alert.threshold_bps == pytest.approx(70e6)
    assert [p["bps"] for p in alert.opened_bps] == [40e6, 30e6]
    assert alert.series == "P1 wdefault default" and alert.mode == "quick"
    kinds = sorted(Delivery.objects.filter(alert=alert).values_list("kind", "channel", "target", "status"))
    assert kinds == [
        ("opened", "email", "noc@example.org", "pending"),
        ("opened", "email", "ops@example.org", "pending"),
        ("opened", "webhook", "http://127.0.0.1:9/hook", "pending"),
    ]


def test_rule_closes_after_k_good_results_with_frozen_baseline(site, vantage):
    _rule()
    _feed(site, vantage, [100e6] * 4 + [30e6, 30e6])
    alert = Alert.objects.get()
    # Still low: stays open, although the newest 4 results (mostly 30) would make a low baseline.
    assert _feed(site, vantage, [30e6, 30e6, 80e6], start=6) == []
    changed = _feed(site, vantage, [75e6], start=9)
    assert [a.pk for a in changed] == [alert.pk]
    alert.refresh_from_db()
    assert not alert.is_open and [p["bps"] for p in alert.closed_bps] == [80e6, 75e6]
    assert sorted(Delivery.objects.filter(alert=alert, kind="closed").values_list("channel", flat=True)) == [
        "email",
        "email",
        "webhook",
    ]
    # A later drop opens a new alert against a fresh baseline.
    _feed(site, vantage, [75e6] * 3 + [10e6, 10e6], start=10)
    assert Alert.objects.filter(closed_at__isnull=True).count() == 1 and Alert.objects.count() == 2


def test_rule_needs_n_baseline_results(site, vantage):
    _rule(baseline_results=5)
    assert _feed(site, vantage, [100e6] * 4 + [10e6, 10e6]) == []
    assert Alert.objects.count() == 0


def test_rule_compares_only_same_settings(site, vantage):
    _rule()
    _feed(site, vantage, [100e6] * 4)
    # Another window is another series: its low rates are not a drop of the default window's.
    assert _feed(site, vantage, [10e6, 10e6], start=4, window_bytes=8192) == []
    _rule(name="any setting", same_settings=False)
    changed = _feed(site, vantage, [10e6], start=6, window_bytes=8192)
    assert [(a.rule.name, a.series) for a in changed] == [("any setting", "any")]


def test_rule_scope_site_vantage_mode(site, vantage, make_site, make_vantage):
    other_site, other_vantage = make_site(), make_vantage()
    _rule(site=other_site)
    _rule(name="other vantage", vantage=other_vantage)
    _rule(name="full runs", mode="full")
    _rule(name="disabled", enabled=False)
    assert _feed(site, vantage, [100e6] * 4 + [10e6, 10e6]) == []
    _rule(name="this path", site=site, vantage=vantage)
    assert [a.rule.name for a in _feed(site, vantage, [10e6], start=6)] == ["this path"]


def test_rule_baseline_window_excludes_old_results(site, vantage):
    _rule(baseline_days=1)
    old = T0 - dt.timedelta(days=5)
    for i in range(4):
        factories.make_done_measurement(
            site=site,
            vantage=vantage,
            created_at=old + dt.timedelta(minutes=i),
            result=factories.sample_result_event(quick_bps=100e6),
        )
    assert _feed(site, vantage, [10e6, 10e6]) == []


def test_rule_uses_cumulative_when_quick_not_entered(site, vantage):
    """A quick run that never left slow-start is judged on what it measured (its headline)."""
    _rule()
    _feed(site, vantage, [100e6] * 4)
    for i in (4, 5):
        created = T0 + dt.timedelta(minutes=10 * i)
        m = factories.make_done_measurement(
            site=site,
            vantage=vantage,
            created_at=created,
            result=factories.sample_result_event(quick_mode_entered=False, quick_bps=None, cumulative_bps=20e6),
        )
        changed = evaluate(m.pk)
    assert [p["bps"] for p in changed[0].opened_bps] == [20e6, 20e6]


def test_evaluate_ignores_unfinished_measurement(site, vantage):
    _rule(baseline_results=1, consecutive=1)
    m = factories.make_measurement(site=site, vantage=vantage, status="failed")
    assert evaluate(m.pk) == []
