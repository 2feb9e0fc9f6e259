"""Methods and tasks from outside the checkout: ``--plugins PATH_OR_MODULE`` and installed entry points.

A plugin is ordinary Python that registers on import, as the built-in ``methods/`` and ``tasks/`` do
(``@register_method`` from ``specbench.api``). It can be given as:

- a ``.py`` file: imported under a private name (``specbench_plugin_<stem>_<hash>``);
- a folder with ``__init__.py``: imported as a package under such a name, with each public module in it (as the
  built-in packages are); a folder without one: each public ``.py`` file in it, as files;
- a module name (``my_drafter``): imported from ``sys.path``, a package with its public modules;
- an installed distribution's entry point in the group ``specbench.methods`` or ``specbench.tasks``: read by
  discovery, so an installed plugin needs no flag.

Each one is recorded (``PluginOrigin``: where it came from, a hash of its source, what it registered); the run's
manifest keeps the list and a resumed run refuses a plugin whose source changed (``run/plugin_guard.py``).
Errors are one line (``PluginError``, exit 2): a plugin that fails to import (with the file and line), registers
a name that exists, registers nothing, or does not finish importing within the deadline.

>>> origin = load_plugin(PluginSpec("json"))  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
specbench.plugins.outside.PluginError: plugin json registers nothing ...
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
import threading
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from specbench.errors import UserError
from specbench.plugins import registration_log
from specbench.plugins.registration_log import DuplicateNameError

ENTRY_POINT_GROUPS = ("specbench.methods", "specbench.tasks")
DEADLINE_ENV = "SPECBENCH_PLUGIN_DEADLINE_S"
DEFAULT_DEADLINE_S = 120.0  # importing a plugin that loads torch and transformers takes a few seconds; a hang, forever

_LOADED: list["PluginOrigin"] = []


class PluginError(UserError):
    """An outside plugin could not be loaded (one line, exit 2)."""


@dataclass(frozen=True)
class PluginSpec:
    """What to load: ``text`` as given (a path or a module name), or an entry point (``entry_point`` set)."""

    text: str
    entry_point: Any = None  # importlib.metadata.EntryPoint


@dataclass(frozen=True)
class PluginOrigin:
    """Where a loaded plugin came from: ``kind`` file | folder | module | entry point, the file or folder read,
    the sha256 of its Python source, and what it registered (``"method my-drafter"``)."""

    spec: str
    kind: str
    source: str
    sha256: str
    registered: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"registered": list(self.registered)}


def loaded_plugins() -> list[dict[str, Any]]:
    """Every outside plugin loaded in this process, as the manifest records them."""
    return [o.as_dict() for o in _LOADED]


def source_sha256(path: Path) -> str:
    """sha256 over a file, or over a folder's ``.py`` files (their relative paths and bytes, sorted)."""
    h = hashlib.sha256()
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    for f in files:
        if "__pycache__" not in f.parts:
            h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _private_name(path: Path) -> str:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"specbench_plugin_{stem}_{digest}"


def _import_file(path: Path, package: bool) -> ModuleType:
    """Import a file, or a folder as a package, under a private name (registered in ``sys.modules`` first, as
    an import does, so dataclasses and relative imports inside it work)."""
    name = _private_name(path)
    location = path / "__init__.py" if package else path
    spec = importlib.util.spec_from_file_location(name, location,
                                                  submodule_search_locations=[str(path)] if package else None)
    if spec is None or spec.loader is None:
        raise PluginError(f"plugin {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _with_public_modules(module: ModuleType) -> ModuleType:
    """Import a package's public modules too (``_private`` ones are its helpers)."""
    for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
        if not info.name.startswith("_"):
            importlib.import_module(f"{module.__name__}.{info.name}")
    return module


def _resolve(spec: PluginSpec) -> tuple[str, Path | None, Callable[[], Any]]:
    """(kind, source path, the import to run) for ``spec``."""
    if spec.entry_point is not None:
        ep = spec.entry_point
        return "entry point", None, lambda: _with_public_modules(m) if isinstance(m := ep.load(), ModuleType) else m
    path = Path(spec.text).expanduser()
    if spec.text.endswith(".py") or os.sep in spec.text or path.exists():
        if path.is_file() and path.suffix == ".py":
            return "file", path.resolve(), lambda: _import_file(path.resolve(), package=False)
        if path.is_dir() and (path / "__init__.py").is_file():
            return "folder", path.resolve(), lambda: _with_public_modules(_import_file(path.resolve(), package=True))
        if path.is_dir():
            files = sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
            return "folder", path.resolve(), lambda: [_import_file(f.resolve(), package=False) for f in files]
        raise PluginError(f"plugin {spec.text}: no such .py file, folder or module")
    return "module", None, lambda: _with_public_modules(importlib.import_module(spec.text))


def _module_source(spec: PluginSpec) -> Path | None:
    """The file or folder of an imported module plugin (for its hash)."""
    name = spec.entry_point.module if spec.entry_point is not None else spec.text
    module = sys.modules.get(name)
    if module is None or getattr(module, "__file__", None) is None:
        return None
    file = Path(module.__file__)
    return file.parent if file.name == "__init__.py" else file


def _run_with_deadline(label: str, load: Callable[[], Any], deadline_s: float) -> None:
    """Run ``load`` (an import) in a daemon thread; a hang is named after ``deadline_s``, not waited on."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            load()
        except BaseException as e:  # (SystemExit at import is a failure too)
            failure.append(e)

    thread = threading.Thread(target=target, name=f"plugin import {label}", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if thread.is_alive():
        raise PluginError(f"plugin {label} did not finish importing within {deadline_s:g} s (set {DEADLINE_ENV} "
                          "to wait longer)")
    if failure:
        e = failure[0]
        if isinstance(e, DuplicateNameError):
            raise PluginError(f"plugin {label}: {e}: that name exists already (rename the plugin's)") from e
        if isinstance(e, PluginError):
            raise e
        frame = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        where = f" ({frame.filename}:{frame.lineno})" if frame else ""
        raise PluginError(f"plugin {label} failed to import: {type(e).__name__}: {e}{where}") from e


def deadline_s() -> float:
    try:
        return float(os.environ.get(DEADLINE_ENV, DEFAULT_DEADLINE_S))
    except ValueError:
        raise PluginError(f"{DEADLINE_ENV} must be a number of seconds, not {os.environ[DEADLINE_ENV]!r}") from None


def load_plugin(spec: PluginSpec) -> PluginOrigin:
    """Import one plugin and record it; raises ``PluginError`` (one line) when it cannot be used."""
    label = f"{spec.entry_point.group}:{spec.entry_point.name}" if spec.entry_point is not None else spec.text
    kind, source, load = _resolve(spec)
    start = len(registration_log.ADDED)
    _run_with_deadline(label, load, deadline_s())
    added = tuple(registration_log.since(start))
    if not added:
        raise PluginError(f"plugin {label} registers nothing (decorate a drafter factory with "
                          "specbench.api.register_method, or a task class with register_task)")
    source = source or _module_source(spec)
    origin = PluginOrigin(label, kind, str(source) if source else "", source_sha256(source) if source else "", added)
    _LOADED.append(origin)
    return origin
