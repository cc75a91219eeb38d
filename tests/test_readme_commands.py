"""Every command the README shows works as written: the commands are read from its code
blocks; each `make` target exists and its recipe expands (make -n), every script a command
line starts with is executable, and the cheap ones run for real."""

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    """Command lines of the README's fenced code blocks, comments removed, continuation lines
    (a trailing backslash) joined."""
    text = (ROOT / "README.md").read_text()
    lines = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
        for line in re.sub(r"\\[ \t]*(?:#[^\n]*)?\n\s*", " ", block).splitlines():
            command = line.split("  #")[0].strip()
            first = command.split(" ")[0] if command else ""
            if first == "make" or "/" in first or command.startswith("python manage.py "):
                lines.append(command)
    return lines


COMMANDS = readme_commands()


def test_readme_commands_found():
    assert "make run" in COMMANDS and "prober/lab/labctl.py paths" in COMMANDS


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("make ")])
def test_readme_make_target_exists(command):
    # -n prints the recipes without running them: an unknown target or a broken recipe fails.
    out = subprocess.run(
        ["make", "-n", *shlex.split(command)[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("command", [c for c in COMMANDS if not c.startswith(("make ", "python "))])
def test_readme_script_is_executable(command):
    program = ROOT / shlex.split(command)[0]
    if program.parent.name == "build":  # built by a make command the README shows first
        return
    assert program.exists() and os.access(program, os.X_OK), f"{program} is not executable ({command!r})"


def test_readme_labctl_paths_runs_as_written():
    import json

    out = subprocess.run(
        shlex.split("prober/lab/labctl.py paths"), cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    names = json.loads((ROOT / "prober" / "lab" / "paths.json").read_text())["paths"]
    assert names and all(name in out.stdout for name in names)


MANAGE_COMMANDS = [c for c in COMMANDS if c.startswith("python manage.py ")]
# What a fresh machine's shell has: none of the portal's variables (make test exports some).
NOT_ON_A_FRESH_MACHINE = {
    "DATABASE_URL",
    "REDIS_URL",
    "DJANGO_SETTINGS_MODULE",
    "SECRET_KEY",
    "SECRET_KEY_FILE",
    "DEBUG",
}


def fresh_env(var_dir, **extra):
    env = {k: v for k, v in os.environ.items() if k not in NOT_ON_A_FRESH_MACHINE}
    # The checkout's var/ in real life; the test's own here, so it cannot touch a developer's.
    return dict(env, PORTAL_VAR_DIR=str(var_dir), PYTHONUNBUFFERED="1", **extra)


def run_readme_command(command, env):
    args = shlex.split(command)
    args[0] = sys.executable  # `python` inside the activated .venv
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)


def test_readme_manage_commands_found():
    assert "python manage.py issue_token demo" in MANAGE_COMMANDS
    assert any(c.startswith("python manage.py sweep create wan ") and "--budget 10G" in c for c in MANAGE_COMMANDS)
    assert "python manage.py sweep run wan --wait" in MANAGE_COMMANDS


@pytest.fixture
def make_run(tmp_path, quickprobe_bin):
    """scripts/run.py (make run) on a fresh machine's environment: no key, no database URL."""
    from tests import servers

    port = servers.free_port()
    env = fresh_env(tmp_path / "var", PORT=str(port))
    proc, log = servers.start_make_run(tmp_path, env)
    try:
        servers.wait_make_run(proc, log)
        yield tmp_path / "var", log
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        finally:
            servers.stop(proc)


@pytest.mark.e2e
def test_readme_manage_commands_run_beside_make_run(make_run):
    var_dir, log = make_run
    assert (var_dir / "secret_key").is_file()
    env = fresh_env(var_dir)
    outputs = {}
    for command in MANAGE_COMMANDS:
        out = run_readme_command(command, env)
        assert out.returncode == 0, (
            f"{command!r} failed:\n{out.stderr[-3000:]}\n--- make run ---\n{log.read_text()[-3000:]}"
        )
        outputs[command] = out.stdout
    token = outputs["python manage.py issue_token demo"].strip()
    assert re.fullmatch(r"[A-Za-z0-9_\-]{20,}", token), token
    create = next(c for c in MANAGE_COMMANDS if c.startswith("python manage.py sweep create"))
    assert outputs[create].startswith("sweep wan: 4 setting(s), every 6h")
    url, totals = outputs["python manage.py sweep run wan --wait"].splitlines()[-2:]
    assert re.fullmatch(r"http://127\.0\.0\.1:8000/sweeps/[\w-]+/", url), url
    # make run's worker measured every cell, one at a time, against its demo site.
    assert totals.startswith("4 cells: 4 done, 0 failed, 0 skipped, 0 running, 0 queued;"), totals
    assert outputs["python manage.py sweep list"].startswith("wan\tenabled\tevery 6h")


@pytest.mark.parametrize(
    "program",
    [
        ["manage.py", "check"],  # where make run never ran: no var/secret_key to find
        ["-c", "import portal.wsgi"],  # a production start: never looks in var/
    ],
)
def test_start_without_secret_key_still_refuses(tmp_path, program):
    var_dir = tmp_path / "var"
    if program[0] == "-c":
        var_dir.mkdir()
        (var_dir / "secret_key").write_text("a-key-make-run-left-behind-" + "x" * 40 + "\n")
    out = subprocess.run(
        [sys.executable, *program],
        cwd=ROOT,
        env=fresh_env(var_dir, DJANGO_SETTINGS_MODULE="portal.settings"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "SECRET_KEY is not set, and DEBUG is off" in out.stderr, out.stderr[-2000:]
