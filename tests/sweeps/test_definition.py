"""Defining sweeps: the shared form, its beat entry, and `manage.py sweep create / list`."""

import json

import pytest
from django.core.management import CommandError, call_command
from django_celery_beat.models import PeriodicTask

from portal.sweeps.forms import SweepForm
from portal.sweeps.models import Sweep

from .conftest import make_sweep


def test_create_command_defines_sweep_with_matrix_and_interval(network, capsys):
    call_command(
        "sweep",
        "create",
        "wan",
        "--sites",
        "alpha,bravo",
        "--windows",
        "64K,256K,1M",
        "--streams",
        "1,4,16",
        "--mode",
        "quick",
        "--every",
        "6h",
        "--slip",
        "10m",
        "--budget",
        "10G",
    )
    sweep = Sweep.objects.get(name="wan")
    assert (sweep.modes, sweep.windows, sweep.streams, sweep.congestion_controls) == (
        ["quick"],
        [65536, 262144, 1048576],
        [1, 4, 16],
        [""],
    )
    assert (sweep.every_s, sweep.cron, sweep.slip_s, sweep.daily_budget_bytes) == (21600, "", 600, 10 * 2**30)
    assert (sweep.all_sites, sorted(sweep.sites.values_list("slug", flat=True)), sweep.all_vantages) == (
        False,
        ["alpha", "bravo"],
        True,
    )
    assert capsys.readouterr().out == "sweep wan: 9 setting(s), every 6h\n"
    task = PeriodicTask.objects.get(pk=sweep.periodic_task_id)
    assert (
        task.task,
        json.loads(task.kwargs),
        task.enabled,
        task.interval.every,
        task.interval.period,
        task.crontab,
    ) == ("sweeps.fire", {"sweep_id": sweep.pk}, True, 21600, "seconds", None)


def test_create_command_cron_schedule(network):
    call_command("sweep", "create", "six-hourly", "--cron", "0 */6 * * *", "--paused")
    sweep = Sweep.objects.get(name="six-hourly")
    task = PeriodicTask.objects.get(pk=sweep.periodic_task_id)
    assert (task.enabled, task.interval, task.crontab.minute, task.crontab.hour, str(task.crontab.timezone)) == (
        False,
        None,
        "0",
        "*/6",
        "UTC",
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--streams", "1,65"], "--streams: streams 65 is out of range: allowed 1 to 64"),
        (["--windows", "64K,2G"], "--windows: window '2G' is not a size"),
        (["--mode", "quick,fast"], "--mode: mode 'fast' is not allowed: choose from quick, full, validate"),
        (["--cron", "0 */6 * *"], "--cron: crontab '0 */6 * *' has 4 fields: write five"),
        (["--cron", "61 * * * *"], "--cron: crontab '61 * * * *' is not valid: Invalid end range: 61 > 59."),
        (["--every", "6x"], "--every: interval '6x' is not a duration"),
        (["--every", "5m", "--slip", "5m"], "--slip: random start offset 5m must be shorter than the interval (5m)"),
        (["--slip", "2h"], "--slip: random start offset 2h is too long: allowed 0 to 1h"),
        (["--budget", "lots"], "--budget: size 'lots' is not a size"),
        (
            ["--congestion", "vegas"],
            ("--congestion: congestion control 'vegas' is not offered by any vantage: choose from bbr, cubic, reno"),
        ),
        (["--duration", "61"], "--duration: Ensure this value is less than or equal to 60."),
        (["--sites", "alpha,nowhere"], "--sites: unknown site nowhere"),
    ],
)
def test_create_command_bad_input_names_flag_and_allowed(network, args, message):
    with pytest.raises(CommandError) as exc:
        call_command("sweep", "create", "bad", *args)
    assert str(exc.value).startswith(message)
    assert not Sweep.objects.exists() and not PeriodicTask.objects.filter(task="sweeps.fire").exists()


def test_create_command_duplicate_name_refused(network):
    make_sweep("dup")
    with pytest.raises(CommandError, match=r"^NAME: Sweep with this Name already exists\.$"):
        call_command("sweep", "create", "dup")


def test_form_interval_and_cron_together_refused(network):
    form = SweepForm(
        data={
            "name": "x",
            "all_sites": True,
            "all_vantages": True,
            "modes_text": "quick",
            "streams_text": "1",
            "duration_s": 10,
            "every_text": "1h",
            "cron": "0 * * * *",
        }
    )
    assert form.errors == {"cron": ["give an interval or a crontab, not both"]}


def test_form_chosen_without_sites_refused(network):
    form = SweepForm(
        data={
            "name": "x",
            "all_sites": False,
            "all_vantages": True,
            "modes_text": "quick",
            "streams_text": "1",
            "duration_s": 10,
        }
    )
    assert form.errors == {"sites": ["choose at least one site, or tick 'all sites'"]}


def test_edit_moves_beat_entry_and_pause_disables_it(network):
    sweep = make_sweep(every_text="1h")
    task_pk = sweep.periodic_task_id
    form = SweepForm(instance=sweep, data={**_form_data(sweep), "every_text": "", "cron": "30 2 * * 1"})
    assert form.is_valid(), form.errors
    form.save()
    task = PeriodicTask.objects.get(pk=task_pk)
    assert (task.interval, task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == (None, "30", "2", "1")
    sweep.refresh_from_db()
    sweep.enabled = False
    sweep.save()
    assert PeriodicTask.objects.get(pk=task_pk).enabled is False


def test_unscheduled_sweep_has_no_beat_entry_and_delete_removes_it(network):
    sweep = make_sweep(every_text="1h")
    task_pk = sweep.periodic_task_id
    sweep.every_s = None
    sweep.save()
    assert sweep.periodic_task_id is None and not PeriodicTask.objects.filter(pk=task_pk).exists()
    sweep.every_s = 60
    sweep.save()
    task_pk = sweep.periodic_task_id
    Sweep.objects.filter(pk=sweep.pk).delete()
    assert not PeriodicTask.objects.filter(pk=task_pk).exists()


def test_list_command(network, capsys):
    make_sweep("b-sweep", every_text="6h", streams_text="1,4")
    make_sweep("a-sweep", enabled=False)
    call_command("sweep", "list")
    assert capsys.readouterr().out == (
        "a-sweep\tpaused\tnot scheduled\t1 setting(s)\nb-sweep\tenabled\tevery 6h\t2 setting(s)\n"
    )


def test_list_command_with_no_sweeps_says_so(db, capsys):
    call_command("sweep", "list")
    assert capsys.readouterr().out == ("no sweeps defined (create one with `manage.py sweep create NAME --every 1h`)\n")


def test_run_command_unknown_name(network):
    make_sweep("known")
    with pytest.raises(CommandError, match=r"^no sweep named 'nope': defined sweeps are known$"):
        call_command("sweep", "run", "nope")


def test_run_command_prints_run_page(network, capsys, settings):
    settings.PORTAL_URL = "https://portal.example.org/"
    sweep = make_sweep("now")
    call_command("sweep", "run", "now")
    url, line = capsys.readouterr().out.splitlines()
    run = sweep.runs.get()
    assert url == f"https://portal.example.org/sweeps/{run.slug}/"
    assert line == "6 cells: 0 done, 0 failed, 2 skipped, 0 running, 4 queued; 0 B sent"


def _form_data(sweep):
    form = SweepForm(instance=sweep)
    data = {name: form.initial.get(name, field.initial) for name, field in form.fields.items()}
    data["sites"] = [s.pk for s in data.get("sites") or []]
    data["vantages"] = [v.pk for v in data.get("vantages") or []]
    return {k: v for k, v in data.items() if v is not None}
