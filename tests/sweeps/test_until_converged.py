"""Issue 24: a sweep chooses between answering at the deadline (default) and measuring until
converged; its choice goes to every test it queues and from there to the prober."""

from django.core.management import call_command

from portal.measure import runner
from portal.measure.models import Measurement
from portal.sweeps import planning
from portal.sweeps.forms import SweepForm
from portal.sweeps.models import Sweep

from .conftest import make_sweep


def test_sweep_until_converged_passed_to_each_test_and_the_prober(network):
    sweep = make_sweep(modes_text="quick,full", until_converged="on")
    assert Sweep.objects.get(pk=sweep.pk).until_converged is True
    planning.fire(sweep.pk, trigger="command")
    tests = list(Measurement.objects.filter(status="queued"))
    # 2 sites x 2 online vantages x 2 modes
    assert len(tests) == 8 and {m.until_converged for m in tests} == {True}
    commands = {m.mode: runner.prober_command(m) for m in tests}
    assert commands["quick"][-1] == "--until-converged"
    assert "--until-converged" not in commands["full"]  # a full run goes to -t anyway


def test_sweep_default_answers_at_the_deadline(network):
    sweep = make_sweep()
    assert sweep.until_converged is False
    planning.fire(sweep.pk, trigger="command")
    tests = list(Measurement.objects.filter(status="queued"))
    assert len(tests) == 4 and {m.until_converged for m in tests} == {False}
    assert all("--until-converged" not in runner.prober_command(m) for m in tests)


def test_sweep_create_command_until_converged_flag(network):
    call_command("sweep", "create", "converging", "--until-converged")
    call_command("sweep", "create", "answering")
    assert dict(Sweep.objects.values_list("name", "until_converged")) == {"converging": True, "answering": False}


def test_sweep_form_offers_until_converged(network):
    field = SweepForm().fields["until_converged"]
    assert field.label == "Measure until converged"
    assert field.required is False


def test_run_page_says_which_rule_quick_tests_follow(network, client):
    answering = planning.fire(make_sweep().pk, trigger="command")
    converging = planning.fire(make_sweep("converging", until_converged="on").pk, trigger="command")
    full_only = planning.fire(make_sweep("long", modes_text="full").pk, trigger="command")
    html = client.get(answering.get_absolute_url()).content.decode()
    assert '5 s tests, quick ones <span id="run-quick-rule">answering at their deadline</span>, not scheduled.' in html
    html = client.get(converging.get_absolute_url()).content.decode()
    assert '<span id="run-quick-rule">measured until converged (they may run the full -t)</span>' in html
    assert 'id="run-quick-rule"' not in client.get(full_only.get_absolute_url()).content.decode()
