"""Sweep admin actions need "change sweep": a staff user who may only view sweeps cannot run,
pause or resume one (issue 28, finding 4)."""

import pytest
from django.contrib.auth.models import Permission

from portal.sweeps.models import Sweep, SweepRun
from tests import factories

from .conftest import make_sweep


def staff_with(*codenames):
    user = factories.make_user(is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def _act(client, action, sweep):
    return client.post("/admin/sweeps/sweep/", {"action": action, "_selected_action": [sweep.pk]}, follow=True)


@pytest.fixture
def viewer(client, network):
    client.force_login(staff_with("view_sweep", "view_measurement"))
    page = client.get("/admin/sweeps/sweep/")
    assert page.status_code == 200
    for action in ("run_now", "pause", "resume"):
        assert f'value="{action}"' not in page.content.decode()
    return client


def test_admin_run_now_refused_to_view_only_staff(viewer):
    sweep = make_sweep(every_text="1h")
    assert _act(viewer, "run_now", sweep).status_code == 200
    assert not SweepRun.objects.exists()


def test_admin_pause_refused_to_view_only_staff(viewer):
    sweep = make_sweep(every_text="1h")
    _act(viewer, "pause", sweep)
    assert Sweep.objects.get(pk=sweep.pk).enabled is True


def test_admin_resume_refused_to_view_only_staff(viewer):
    sweep = make_sweep(every_text="1h", enabled=False)
    _act(viewer, "resume", sweep)
    assert Sweep.objects.get(pk=sweep.pk).enabled is False


def test_admin_actions_allowed_with_change_sweep(client, network):
    client.force_login(staff_with("view_sweep", "change_sweep"))
    sweep = make_sweep(every_text="1h")
    _act(client, "pause", sweep)
    assert Sweep.objects.get(pk=sweep.pk).enabled is False
    _act(client, "resume", sweep)
    assert Sweep.objects.get(pk=sweep.pk).enabled is True
    _act(client, "run_now", sweep)
    assert SweepRun.objects.get(sweep=sweep).trigger == "admin"
