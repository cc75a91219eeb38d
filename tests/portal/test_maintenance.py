"""No maintenance inside user requests (issue 26): a request for a test does not reap; the
housekeeping worker's beat task does. And the heartbeat settings are one family, the old
names refused with the new one."""

import subprocess
import sys
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.measure import dispatch, tasks
from portal.measure.models import Measurement
from tests import factories, servers


def test_request_measurement_leaves_abandoned_rows_to_the_reap_task(db, user, site, vantage, settings):
    long_ago = timezone.now() - timedelta(seconds=settings.HEARTBEAT_TEST_LOST_S + 60)
    abandoned = factories.make_measurement(
        site=factories.make_site(slug="elsewhere"), vantage=vantage, status="running", heartbeat_at=long_ago
    )
    with CaptureQueriesContext(connection) as queries:
        dispatch.request_measurement({"site": site.slug, "vantage": vantage.name, "duration_s": "3"}, user)
    assert Measurement.objects.get(pk=abandoned.pk).status == "running"
    assert not [q["sql"] for q in queries if "worker lost" in q["sql"] or "'failed'" in q["sql"]]
    # The beat task on the housekeeping worker is where it is failed.
    counts = tasks.reap()
    assert counts["worker_lost"] == 1
    assert Measurement.objects.get(pk=abandoned.pk).failure_code == "worker_lost"


def test_settings_old_heartbeat_name_refused_naming_the_new_one():
    env = {"PATH": "/usr/bin:/bin", "DEBUG": "1", "HEARTBEAT_INTERVAL_S": "2"}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='portal.settings'; django.setup()",
        ],
        cwd=servers.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert (
        "HEARTBEAT_INTERVAL_S is now named HEARTBEAT_TEST_S: rename it in the environment (same meaning)" in out.stderr
    )
