"""Plugin discovery: import every module of the plugin packages so their ``@register_*`` decorators run.

The built-in plugin packages (``methods/``, ``tasks/`` at the top level of the checkout, imported as
``specbench_methods`` and ``specbench_tasks``: ``checkout_names.py``), then the entry points of installed outside
plugins (``outside.py``; those given with ``--plugins`` load after discovery, from the CLI).
The built-in packages are named here as
strings and imported by name only: the core never imports a plugin module statically. Discovery runs
once; it counts as done only after every import succeeded, and a failing plugin is named in the error
(and the next registry read tries again instead of answering from a partial registry).

>>> from specbench.plugins.registry import METHODS
>>> "pld" in METHODS  # the first read of a registry runs the discovery
True
"""
from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from typing import Any, Sequence

from specbench.plugins.outside import ENTRY_POINT_GROUPS, PluginError, PluginSpec, load_plugin

PLUGIN_PACKAGES = ("specbench_methods", "specbench_tasks")  # (the folders methods/, tasks/)
CORE_PLUGIN_MODULES = ("specbench.datastore.corpora",)

_loaded = False
_loading = False
_failure: "PluginImportError | PluginError | None" = None


class PluginImportError(ImportError):
    """A plugin module failed to import; the message names it and the original error."""


def plugin_modules(packages: Sequence[str] | None = None) -> list[str]:
    """Dotted names of the public modules of each plugin package (``_private`` ones are helpers).

    >>> "specbench_tasks.gsm8k" in plugin_modules()
    True
    """
    names = list(CORE_PLUGIN_MODULES)
    for pkg_name in PLUGIN_PACKAGES if packages is None else packages:
        pkg = importlib.import_module(pkg_name)
        names += [f"{pkg_name}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    return names


def installed_entry_points() -> list[Any]:
    """The entry points of installed distributions in specbench's groups (``specbench.methods``,
    ``specbench.tasks``), in a stable order."""
    found = [ep for group in ENTRY_POINT_GROUPS for ep in importlib.metadata.entry_points(group=group)]
    return sorted(found, key=lambda ep: (ep.group, ep.name))


def load_plugins() -> None:
    """Import all plugin modules once; raises ``PluginImportError`` naming the module that failed.

    A failure is remembered and raised again on every later call: re-importing a half-registered
    module would only add a confusing "registered twice" error.
    """
    global _loaded, _loading, _failure
    if _failure is not None:
        raise _failure
    if _loaded or _loading:  # a plugin reading a registry while discovery runs sees what exists so far
        return
    _loading = True
    try:
        for name in plugin_modules():
            try:
                importlib.import_module(name)
            except Exception as e:
                _failure = PluginImportError(f"plugin {name} failed to import: {type(e).__name__}: {e}")
                raise _failure from e
        for entry_point in installed_entry_points():  # outside plugins installed with pip: after the built-ins,
            try:                                      # so a name they reuse is refused as theirs
                load_plugin(PluginSpec(entry_point.value, entry_point))
            except PluginError as e:
                _failure = e
                raise
        _loaded = True
    finally:
        _loading = False
