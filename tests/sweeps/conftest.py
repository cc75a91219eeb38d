import pytest
from django.utils import timezone

from portal.sweeps.forms import SweepForm
from tests import factories


@pytest.fixture
def network(db):
    """Two enabled sites, a disabled one, two online vantages, one offline, one disabled."""
    sites = [factories.make_site(name=name, slug=name) for name in ("alpha", "bravo")]
    factories.make_site(name="zulu-off", slug="zulu-off", enabled=False)
    vantages = [factories.make_vantage(name=name) for name in ("east", "west")]
    factories.make_vantage(name="gone", last_seen=timezone.now() - timezone.timedelta(hours=2))
    factories.make_vantage(name="retired", enabled=False)
    return sites, vantages


def make_sweep(name="nightly", **fields):
    """A sweep saved through the one form the admin and the command use."""
    data = {
        "name": name,
        "enabled": True,
        "all_sites": True,
        "all_vantages": True,
        "modes_text": "quick",
        "windows_text": "default",
        "streams_text": "1",
        "congestion_text": "default",
        "duration_s": 5,
        "every_text": "",
        "cron": "",
        "slip_text": "0",
        "budget_text": "",
    }
    data.update(fields)
    form = SweepForm(data=data)
    assert form.is_valid(), form.errors
    return form.save()


@pytest.fixture
def sweep_factory(db):
    return make_sweep
