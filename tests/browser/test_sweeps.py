"""Sweeps in a real browser: an admin defines a sweep, pauses it, runs it now and watches its
run page fill in as a real worker measures a real iperf3 server; polling ends with 286."""

import re

import pytest
from django_celery_beat.models import PeriodicTask

from portal.sweeps.models import Sweep, SweepRun
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

PASSWORD = "browser-sweeps-pw-1"


def _action(page, base, sweep, action):
    page.goto(f"{base}/admin/sweeps/sweep/")
    page.check(f"input[name=_selected_action][value='{sweep.pk}']")
    page.select_option("select[name=action]", action)
    page.locator("button[name=index]").click()
    page.wait_for_load_state()


def test_admin_creates_pauses_runs_sweep_and_watches_grid(watched_page, live_server, iperf3_port, celery_worker):
    page = watched_page.page
    base = live_server.url
    factories.make_user("root", password=PASSWORD, is_staff=True, is_superuser=True)
    factories.make_site(name="Loopback iperf3", slug="loopback", host="127.0.0.1", port=iperf3_port)

    page.goto(f"{base}/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.locator("input[type=submit], button[type=submit]").last.click()
    page.wait_for_url(f"{base}/admin/")

    page.goto(f"{base}/admin/sweeps/sweep/add/")
    page.fill("#id_name", "loopback-matrix")
    page.fill("#id_modes_text", "quick")
    page.fill("#id_windows_text", "default,1M")
    page.fill("#id_streams_text", "1,2")
    page.fill("#id_duration_s", "3")
    page.fill("#id_every_text", "6h")
    page.fill("#id_slip_text", "10m")
    watched_page.screenshot("admin-sweep-add")
    page.locator("input[name=_save]").click()
    page.wait_for_url(f"{base}/admin/sweeps/sweep/")
    assert "was added successfully" in page.locator(".messagelist").inner_text()
    sweep = Sweep.objects.get(name="loopback-matrix")
    assert PeriodicTask.objects.get(pk=sweep.periodic_task_id).enabled is True

    _action(page, base, sweep, "pause")
    assert "1 sweep(s) paused." in page.locator(".messagelist").inner_text()
    assert PeriodicTask.objects.get(pk=sweep.periodic_task_id).enabled is False

    polls = []
    page.on(
        "response",
        lambda r: (
            polls.append(r.status) if r.request.headers.get("hx-request") == "true" and "/sweeps/" in r.url else None
        ),
    )
    _action(page, base, sweep, "run_now")
    run = SweepRun.objects.get(sweep=sweep)
    page.locator(".messagelist").get_by_role("link", name=f"run {run.slug}").click()
    page.wait_for_url(f"{base}/sweeps/{run.slug}/")
    assert page.locator("#cells tbody tr").count() == 1
    assert page.locator("#cells thead th").all_inner_texts()[2:] == [
        "quick -w default -P 1",
        "quick -w default -P 2",
        "quick -w 1M -P 1",
        "quick -w 1M -P 2",
    ]
    page.wait_for_function("() => document.querySelector('#run-state .badge.done') !== null", timeout=90_000)
    assert "4 cells: 4 done, 0 failed, 0 skipped" in " ".join(page.locator("#run-state").inner_text().split())
    links = page.locator("#cells td.cell a")
    assert links.count() == 4
    assert all(re.fullmatch(r"/m/[A-Za-z0-9_-]{12}/", links.nth(i).get_attribute("href")) for i in range(4))
    assert re.search(r"\d", page.locator("#total-time-saved").inner_text())
    assert polls and polls[-1] == 286 and all(s == 200 for s in polls[:-1]), polls
    watched_page.screenshot("sweep-run-grid")
    links.first.click()
    page.wait_for_url(re.compile(r"/m/[A-Za-z0-9_-]{12}/$"))
    watched_page.assert_clean()
