"""Layering: the core (``specbench/`` without its CLI layer) never imports ``methods``, ``tasks`` or
``specbench.commands``; plugins are found by ``specbench.plugins`` by package name only."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "specbench"
UPPER = ("methods", "tasks", "specbench.commands", "specbench.cli", "specbench.__main__")
CLI_LAYER = {CORE / "cli.py", CORE / "__main__.py"}  # the entry point sits above the commands it loads


def upward_imports(source: str, module: str = "") -> list[str]:
    """Dotted names of upper-layer modules ``source`` imports (statements at any depth, relative ones
    resolved against ``module``, and literal ``importlib.import_module("...")`` calls)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: -node.level]
                base = ".".join(parts + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]
        found += [n for n in names if any(n == u or n.startswith(u + ".") for u in UPPER)]
    return found


def test_checker_catches_every_form() -> None:
    assert upward_imports("import methods.rest") == ["methods.rest"]
    assert upward_imports("def f():\n    from tasks.humaneval import humaneval_file\n")
    assert upward_imports("from specbench import commands") == ["specbench.commands"]
    assert upward_imports("from ..commands import run", "specbench.stats.x")
    assert upward_imports("importlib.import_module('methods.pld')") == ["methods.pld"]
    assert upward_imports("import specbench.stats\nfrom specbench.engine import loop") == []


def test_core_imports_only_downward() -> None:
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        if path in CLI_LAYER or CORE / "commands" in path.parents:
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        bad += [f"{path.relative_to(ROOT)}: {name}" for name in upward_imports(path.read_text(), module)]
    assert not bad, "core modules import upward:\n" + "\n".join(bad)
