"""Plugin discovery: a plugin that fails to import is named, and never leaves a partial registry behind."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import specbench.plugins.discovery as discovery
discovery.PLUGIN_PACKAGES = ("methods", "tasks")  # the packages in the test's folder stand in for the built-ins
from specbench.plugins.discovery import PluginImportError
from specbench.plugins.registry import METHODS
for _ in range(2):  # the second read must not answer from the partial registry
    try:
        METHODS.get("pld")
    except PluginImportError as e:
        print("ERR", e)
    else:
        print("OK")
"""


def test_failing_plugin_is_named_and_registry_stays_unloaded(tmp_path: Path) -> None:
    for pkg, body in (("methods", "raise RuntimeError('boom')\n"), ("tasks", "")):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
        (tmp_path / pkg / "a_plugin.py").write_text(body)
    (tmp_path / "methods" / "pld.py").write_text(
        "from specbench.plugins.registry import register_method\n\n"
        "@register_method('pld', dict)\ndef build(config, env):\n    return None\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert lines == ["ERR plugin methods.a_plugin failed to import: RuntimeError: boom"] * 2, out.stderr


def test_registered_names_and_trainers() -> None:
    from specbench.plugins.registry import METHODS, TASKS, TRAINERS

    assert {"ar", "pld", "rest"} <= set(METHODS.names())
    assert {"gsm8k", "mt_bench"} <= set(TASKS.names()) and "redrafter" in TRAINERS
