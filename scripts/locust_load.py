"""Locust users for `make bench-load` (scripts/bench_load.py writes BENCH_LOAD_CONF and reads
BENCH_LOAD_SAMPLES): anonymous and token readers of the pages, permalinks, CSV and API, each
asking for at most one test (well within the per-user quotas). Every response time is kept
(locust's own percentiles are rounded) and written out when locust quits."""

import itertools
import json
import os
import random
import time
from pathlib import Path

from locust import HttpUser, between, events, task

CONF = json.loads(Path(os.environ["BENCH_LOAD_CONF"]).read_text())
SAMPLES = {}
_tokens = itertools.count()


@events.request.add_listener
def _record(request_type, name, response_time, response_length, exception=None, **kwargs):
    SAMPLES.setdefault(name, []).append([response_time, exception is not None])


@events.quitting.add_listener
def _dump(environment, **kwargs):
    with open(os.environ["BENCH_LOAD_SAMPLES"], "w") as f:
        json.dump(SAMPLES, f)


class Reader(HttpUser):
    wait_time = between(0.5, 1.5)

    def on_start(self):
        token = CONF["tokens"][next(_tokens) % len(CONF["tokens"])]
        self.auth = {"Authorization": f"Bearer {token}"}
        # One test per user, at a random moment of the run.
        self.post_at = time.monotonic() + random.uniform(5, CONF["seconds"] * 0.8)
        self.posted = False

    def _get(self, url, name, **kwargs):
        with self.client.get(url, name=name, catch_response=True, **kwargs) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}")

    @task(10)
    def healthz(self):
        self._get("/healthz", "/healthz")

    @task(10)
    def site_page(self):
        self._get(f"/sites/{CONF['site']}/", "site page")

    @task(10)
    def permalink(self):
        self._get(f"/m/{random.choice(CONF['slugs'])}/", "permalink")

    @task(4)
    def overview(self):
        self._get("/", "sites overview")

    @task(2)
    def site_csv(self):
        self._get(
            f"/sites/{CONF['site']}/measurements.csv?since={CONF['csv_since']}&until={CONF['csv_until']}",
            "site CSV (one week)",
        )

    @task(5)
    def api_measurement(self):
        self._get(f"/api/v1/measurements/{random.choice(CONF['slugs'])}", "API measurement", headers=self.auth)

    @task(3)
    def api_sites(self):
        self._get("/api/v1/sites", "API sites", headers=self.auth)

    @task(2)
    def request_test(self):
        if self.posted or time.monotonic() < self.post_at:
            return
        self.posted = True
        body = {"site": random.choice(CONF["test_sites"]), "vantage": CONF["vantage"], "mode": "quick", "duration_s": 2}
        with self.client.post(
            "/api/v1/measurements", json=body, headers=self.auth, name="API request test", catch_response=True
        ) as response:
            if response.status_code != 201:
                response.failure(f"HTTP {response.status_code}: {response.text[:200]}")
