"""An installed specbench owns no bare top-level name: ``methods/`` and ``tasks/`` import as ``specbench_methods``
and ``specbench_tasks`` (``setup.py``; ``specbench/plugins/checkout_names.py`` in a checkout), so a user's own
``tasks`` or ``methods`` package beside it keeps working, and specbench keeps its own."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

from specbench.plugins.checkout_names import CHECKOUT, checkout_folder

PROBE = """
import methods, tasks  # the user's own packages, first on the path
import specbench
from specbench.plugins.registry import METHODS, TASKS
assert tasks.MINE == "tasks" and methods.MINE == "methods", (tasks.__file__, methods.__file__)
assert "pld" in METHODS and "gsm8k" in TASKS
import specbench_tasks
print("ok", specbench_tasks.__file__)
"""


def test_a_users_own_tasks_and_methods_packages_work_beside_specbench(tmp_path: Path) -> None:
    for name in ("tasks", "methods"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"MINE = {name!r}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(CHECKOUT)]))
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ok", str(CHECKOUT / "tasks" / "__init__.py")]


def test_the_installed_distribution_claims_only_prefixed_names() -> None:
    top = importlib.metadata.distribution("specbench").read_text("top_level.txt")
    assert top is not None and sorted(top.split()) == ["specbench", "specbench_methods", "specbench_tasks"]


def test_the_checkout_finder_maps_only_a_checkout(tmp_path: Path) -> None:
    assert checkout_folder("specbench_tasks") == CHECKOUT / "tasks"
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "__init__.py").write_text("")
    assert checkout_folder("specbench_tasks", tmp_path) is None  # (site-packages: someone else's tasks)
    (tmp_path / "pyproject.toml").write_text("")
    assert checkout_folder("specbench_tasks", tmp_path) == tmp_path / "tasks" and checkout_folder("tasks") is None
