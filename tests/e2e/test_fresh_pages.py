"""Fresh by construction (pagecache.py): a result a real worker stores is on the very next
request of every page that lists it, for anonymous and logged-in readers, with the pages'
cached data warmed up beforehand."""

import time

import pytest
from django.test import Client

from portal.measure.dispatch import request_measurement
from portal.measure.models import Measurement
from tests import factories

pytestmark = pytest.mark.e2e


def _pages(site):
    return {"site page": f"/sites/{site.slug}/", "overview": "/", "CSV": f"/sites/{site.slug}/measurements.csv"}


def _read(client, url):
    response = client.get(url)
    assert response.status_code == 200, url
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode()


def test_result_from_worker_visible_on_next_request(celery_worker, iperf3_port, user):
    site = factories.make_site(slug="fresh-site", port=iperf3_port)
    older = factories.make_done_measurement(site=site, vantage=_worker_vantage(celery_worker))
    anonymous, logged_in = Client(), Client()
    logged_in.force_login(user)
    readers = {"anonymous": anonymous, "logged in": logged_in}
    for client in readers.values():  # every page's cached data exists before the new result
        for url in _pages(site).values():
            assert older.slug in _read(client, url)
    m = request_measurement(
        {"site": site.slug, "vantage": celery_worker.name, "mode": "quick", "duration_s": "3"}, user
    )
    deadline = time.monotonic() + 45
    while not Measurement.objects.filter(pk=m.pk, status="done").exists():
        assert time.monotonic() < deadline, Measurement.objects.get(pk=m.pk).status
        time.sleep(0.05)
    for who, client in readers.items():
        for name, url in _pages(site).items():
            assert m.slug in _read(client, url), f"{name} for {who} readers does not list {m.slug}"
    html = _read(anonymous, f"/sites/{site.slug}/")
    assert "2 measurements: 2 done, 0 failed" in html


def _worker_vantage(worker):
    from portal.measure.models import Vantage

    return Vantage.objects.get(name=worker.name)
