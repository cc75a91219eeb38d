"""Every command the README shows works as written: the commands are read from its code
blocks; each `make` target exists and its recipe expands (make -n), every script a command
line starts with is executable, and the cheap ones run for real."""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    """Command lines of the README's fenced code blocks, comments removed."""
    text = (ROOT / "README.md").read_text()
    lines = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            first = command.split(" ")[0] if command else ""
            if first == "make" or "/" in first:
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


@pytest.mark.parametrize("command", [c for c in COMMANDS if not c.startswith("make ")])
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
