"""A cache outage (Redis down) never fails a page or a test: the cache is best-effort
(portal/cache.py), pages read PostgreSQL, progress writes are skipped."""

import json
import time

import pytest
from django.core.cache import cache

from portal.measure import runner
from portal.measure.models import ApiToken
from tests import factories

pytestmark = pytest.mark.faults


def test_cache_operations_with_redis_down_answer_as_misses_quickly(dead_cache):
    started = time.monotonic()
    assert cache.get("k", "fallback") == "fallback"
    assert cache.set("k", 1) is None
    assert cache.add("k", 1) is False
    assert cache.delete("k") is False
    assert cache.get_many(["a", "b"]) == {}
    assert cache.set_many({"a": 1, "b": 2}) == ["a", "b"]
    assert cache.has_key("k") is False
    with pytest.raises(ValueError):
        cache.incr("k")
    assert time.monotonic() - started < 5


def test_cache_with_redis_up_still_caches(settings, redis_server, cache_key_prefix):
    settings.CACHES = {
        "default": {
            "BACKEND": "portal.cache.ResilientRedisCache",
            "LOCATION": redis_server.url,
            "KEY_PREFIX": cache_key_prefix,
        }
    }
    cache.set("k", {"v": 1}, 30)
    assert cache.get("k") == {"v": 1}
    assert redis_server.client().dbsize() == 1


def test_pages_and_api_with_cache_down_answer_200(client, dead_cache, user):
    done = factories.make_done_measurement(requested_by=user)
    token = ApiToken.issue(user)
    urls = ["/", f"/sites/{done.site.slug}/", f"/m/{done.slug}/", f"/sites/{done.site.slug}/measurements.csv"]
    for url in urls:
        assert client.get(url).status_code == 200, url
    response = client.get(f"/api/v1/measurements/{done.slug}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert json.loads(response.content)["status"] == "done"
    client.force_login(user)
    assert client.get(f"/m/{done.slug}/").status_code == 200


def test_measurement_with_cache_down_is_done_not_internal(transactional_db, dead_cache, iperf3_port, quickprobe_bin):
    site = factories.make_site(port=iperf3_port)
    measurement = factories.make_measurement(site=site, mode="quick", duration_s=2)
    runner.run(measurement.pk)
    measurement.refresh_from_db()
    assert (measurement.status, measurement.failure_code) == ("done", "")
    assert measurement.trace.sample_count > 0
