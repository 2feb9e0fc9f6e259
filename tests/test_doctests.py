"""Every module's doctests run: each module of ``specbench/``, ``methods/`` and ``tasks/`` whose source holds an
interactive example (a line starting ``>>> ``) is imported by name and its docstrings' examples are run as
``doctest.testmod`` would (the module's own globals, its own objects only, default option flags).

A docstring example is a test, so it must be true; one that only illustrates (a call needing a model, a server,
a download) is written without the ``>>> `` prompt (an indented block after ``::``, or inline in double
backquotes), never skipped. A module that needs an optional extra (``pyproject.toml``'s
``[project.optional-dependencies]``) not installed here is skipped, saying which. The examples are small: the
whole file takes seconds, most of it importing modules the suite imports anyway.

Example: ``specbench/results/record.py``'s example is collected as ``test_doctests[specbench.results.record]``;
had it kept its old ``SCHEMA_VERSION`` of 8 (it is 9), that test fails and prints the example's diff.
"""
from __future__ import annotations

import doctest
import importlib
import io
import re
from pathlib import Path

import pytest

from specbench.plugins.checkout_names import IMPORT_NAMES

FOLDER_IMPORT_NAMES = {folder: name for name, folder in IMPORT_NAMES.items()}
ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("specbench", "methods", "tasks")
PROMPT = re.compile(r"^\s*>>> ", re.MULTILINE)
# an optional extra's import name -> the extra (``pip install specbench[EXTRA]``)
OPTIONAL = {"ray": "ray", "sklearn": "adaptive", "bayes_opt": "swift", "llama_cpp": "llamacpp"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = (FOLDER_IMPORT_NAMES.get(parts[0], parts[0]), *parts[1:])  # (methods/ imports as specbench_methods)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_with_examples() -> list[str]:
    """Dotted names of the modules whose source has a ``>>> `` line (``__main__`` modules excluded: importing
    one runs it)."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name != "__main__.py" and PROMPT.search(path.read_text(encoding="utf-8")):
                found.append(module_name(path))
    return found


MODULES = modules_with_examples()


def test_modules_are_found() -> None:
    """The scan sees the packages (an empty parametrization would pass vacuously)."""
    assert len(MODULES) > 100 and "specbench.results.record" in MODULES and "specbench_methods.samd.draft" in MODULES
    assert "specbench_tasks.speed_bench" in MODULES


def import_or_skip(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if top in OPTIONAL:
            pytest.skip(f"{name} imports {top}, of the optional extra {OPTIONAL[top]!r}, not installed here")
        raise


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = import_or_skip(name)
    out = io.StringIO()
    runner = doctest.DocTestRunner(verbose=False)
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=out.write)
    assert runner.failures == 0, f"{name}: {runner.failures} of {runner.tries} examples failed\n{out.getvalue()}"
    # a ``>>> `` line that no docstring holds (a comment, a string) is not run: write it as a real example or
    # drop the prompt
    assert runner.tries > 0, f"{name} has a '>>> ' line outside its docstrings' examples"
