"""The import names of the built-in plugin folders: ``methods/`` imports as ``specbench_methods``, ``tasks/`` as
``specbench_tasks``.

Why not ``methods`` and ``tasks``: installed, specbench would own those bare top-level names, and a user's own
package called ``tasks`` (common in applications) would shadow specbench's or be shadowed by it. The folders keep
the names the layout fixes; ``pyproject.toml`` installs them under the prefixed names (``package-dir``).

In a checkout (a clone, a worktree, a copy on another machine) the folders sit beside ``specbench/``, and the
finder below maps the prefixed names onto them, so the code imported is always the checkout's own, whatever is
installed (an editable install may point at another clone). Installed from a wheel there is no such folder and
the finder stays out of the way.

>>> sorted(IMPORT_NAMES.items())
[('specbench_methods', 'methods'), ('specbench_tasks', 'tasks')]
>>> import specbench_tasks.gsm8k  # resolves in a checkout and when installed alike
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any, Sequence

IMPORT_NAMES = {"specbench_methods": "methods", "specbench_tasks": "tasks"}  # import name -> folder
CHECKOUT = Path(__file__).resolve().parent.parent.parent


def checkout_folder(name: str, root: Path = CHECKOUT) -> Path | None:
    """The folder behind the built-in plugin package ``name`` when ``root`` is a checkout, else None.

    A checkout is told apart from site-packages by its ``pyproject.toml`` (site-packages may hold an unrelated
    ``tasks`` package of its own, which must never be taken for ours).

    >>> checkout_folder("numpy") is None
    True
    """
    folder = IMPORT_NAMES.get(name)
    if folder is None or not (root / "pyproject.toml").is_file() or not (root / folder / "__init__.py").is_file():
        return None
    return root / folder


class CheckoutFinder(importlib.abc.MetaPathFinder):
    """Finds ``specbench_methods`` / ``specbench_tasks`` in the checkout beside ``specbench/``; submodules are then
    found through the package's ``__path__`` by Python's own path finder."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> ModuleSpec | None:
        folder = checkout_folder(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(fullname, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): before an editable install's finder, which may map the
    names onto another clone."""
    if not any(isinstance(f, CheckoutFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, CheckoutFinder())
