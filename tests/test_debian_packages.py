"""make run / make test check their Debian packages (.ci/debian-packages, the one list, also
used by .ci/run) and either install the missing ones as root or stop with the one line to run."""

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "debian_packages.sh"


def _checkout_with(tmp_path, packages):
    (tmp_path / "scripts").mkdir()
    (tmp_path / ".ci").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / SCRIPT.name)
    (tmp_path / ".ci" / "debian-packages").write_text("# comment\n" + packages)
    tmp_path.chmod(0o755)
    return tmp_path / "scripts" / SCRIPT.name


def test_debian_packages_all_installed_here():
    out = subprocess.run([SCRIPT, "test"], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stderr) == (0, "")


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv to drop root")
def test_debian_packages_missing_not_root_says_the_one_line():
    # Not pytest's tmp_path: its parents are private to root, and the script runs as nobody.
    with tempfile.TemporaryDirectory() as tmp:
        _missing_not_root(Path(tmp))


def _missing_not_root(tmp_path):
    script = _checkout_with(tmp_path, "make run\nno-such-package-qp run\nno-such-tool-qp test\n")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    out = subprocess.run([*as_nobody, script, "run"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        "Missing Debian packages for 'make run': no-such-package-qp",
        "Install them (as root) with:",
        "  sudo apt-get install -y --no-install-recommends no-such-package-qp",
    ]
    out = subprocess.run([*as_nobody, script, "test"], capture_output=True, text=True, timeout=60)
    assert "no-such-package-qp no-such-tool-qp" in out.stderr


def test_make_targets_and_ci_use_the_one_list():
    makefile = (ROOT / "Makefile").read_text()
    assert "scripts/debian_packages.sh run" in makefile and "scripts/debian_packages.sh test" in makefile
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/debian_packages.sh test" in ci and "apt-get install" not in ci
