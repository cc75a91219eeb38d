"""Admin actions need the model's change permission: a staff user who may only view
measurements cannot cancel one (issue 28, finding 4)."""

import pytest
from django.contrib.auth.models import Permission

from portal.measure.models import Measurement
from tests import factories


def staff_with(*codenames):
    user = factories.make_user(is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def _cancel(client, measurement):
    return client.post(
        "/admin/measure/measurement/", {"action": "cancel", "_selected_action": [measurement.pk]}, follow=True
    )


def test_admin_cancel_refused_to_view_only_staff(client, measurement):
    client.force_login(staff_with("view_measurement"))
    page = client.get("/admin/measure/measurement/")
    assert page.status_code == 200 and 'value="cancel"' not in page.content.decode()
    response = _cancel(client, measurement)
    assert response.status_code == 200
    measurement.refresh_from_db()
    assert (measurement.status, measurement.failure_code, measurement.failure_reason) == ("queued", "", "")


@pytest.mark.parametrize("codenames", [("view_measurement", "change_measurement"), ("change_measurement",)])
def test_admin_cancel_allowed_with_change_permission(client, measurement, codenames):
    client.force_login(staff_with(*codenames))
    _cancel(client, measurement)
    measurement = Measurement.objects.get(pk=measurement.pk)
    assert (measurement.status, measurement.failure_code) == ("failed", "cancelled")
