"""``scripts/gpu_check.sh`` picks its Python ($PYTHON, else the project's .venv, else python3) and refuses one without
torch in one line naming it, exit 2, instead of a check whose every step crashes on ``ModuleNotFoundError``.
Stand-in pythons only (shell scripts): nothing here imports torch or runs the check."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def stand_in(path: Path, has_torch: bool, log: Path) -> Path:
    """A 'python' that logs its arguments; ``import torch`` fails unless ``has_torch``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fail = "" if has_torch else ('case "$*" in *"import torch"*) echo "ModuleNotFoundError: No module named '
                                 "'torch'\" >&2; exit 1;; esac\n")
    path.write_text(f'#!/bin/sh\necho "{path.name} $*" >> {log}\n{fail}exit 0\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the script in a project folder of its own (its .venv is the test's to make)."""
    (tmp_path / "proj" / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, tmp_path / "proj" / "scripts" / "gpu_check.sh")
    return tmp_path / "proj"


def run(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(["bash", str(project / "scripts" / "gpu_check.sh"), "--device", "cpu"], env=base | env,
                          capture_output=True, text=True, timeout=30)


def test_a_python_without_torch_is_one_line_naming_python(project: Path, tmp_path: Path) -> None:
    py = stand_in(tmp_path / "bin" / "notorch", False, tmp_path / "log")
    out = run(project, {"PYTHON": str(py)})
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [f"gpu_check: PYTHON={py} cannot import torch; set PYTHON to a python with "
                                       "torch (or run make setup for .venv)"]
    assert "scripts/gpu_check.py" not in (tmp_path / "log").read_text()  # the check itself never started


def test_a_missing_python_is_one_line_too(project: Path, tmp_path: Path) -> None:
    out = run(project, {"PYTHON": str(tmp_path / "nowhere" / "python")})
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1 and "is not a program here" in out.stderr


def test_the_projects_venv_is_used_and_python_overrides_it(project: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    stand_in(project / ".venv" / "bin" / "python", True, log)
    assert run(project, {}).returncode == 0
    assert log.read_text().splitlines()[-1] == "python scripts/gpu_check.py --device cpu"
    other = stand_in(tmp_path / "bin" / "mypython", True, log)
    assert run(project, {"PYTHON": str(other)}).returncode == 0
    assert log.read_text().splitlines()[-1] == "mypython scripts/gpu_check.py --device cpu"


def test_without_venv_or_python_it_runs_python3_and_names_it(project: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "path"
    stand_in(bin_dir / "python3", False, tmp_path / "log")
    out = run(project, {"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert out.returncode == 2 and out.stderr.splitlines() == [
        "gpu_check: python3 (PYTHON unset, no .venv) cannot import torch; set PYTHON to a python with torch (or run "
        "make setup for .venv)"]


@pytest.mark.skipif(not Path("/usr/bin/python3").is_file(), reason="no /usr/bin/python3")
def test_a_real_python_without_torch(project: Path) -> None:
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode == 0:
        pytest.skip("/usr/bin/python3 has torch")
    out = run(project, {"PYTHON": "/usr/bin/python3"})
    assert out.returncode == 2 and out.stderr.splitlines() == [
        "gpu_check: PYTHON=/usr/bin/python3 cannot import torch; set PYTHON to a python with torch (or run make "
        "setup for .venv)"]
