"""Plugin discovery: import every module of the plugin packages so their ``@register_*`` decorators run.

The plugin packages (``methods/``, ``tasks/`` at the top level of the checkout) are named here as
strings and imported by name only: the core never imports a plugin module statically. Discovery runs
once; it counts as done only after every import succeeded, and a failing plugin is named in the error
(and the next registry read tries again instead of answering from a partial registry).

>>> from specbench.plugins.registry import METHODS
>>> "pld" in METHODS  # the first read of a registry runs the discovery
True
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Sequence

PLUGIN_PACKAGES = ("methods", "tasks")
CORE_PLUGIN_MODULES = ("specbench.datastore.corpora",)

_loaded = False
_loading = False
_failure: "PluginImportError | None" = None


class PluginImportError(ImportError):
    """A plugin module failed to import; the message names it and the original error."""


def plugin_modules(packages: Sequence[str] = PLUGIN_PACKAGES) -> list[str]:
    """Dotted names of the public modules of each plugin package (``_private`` ones are helpers).

    >>> "tasks.gsm8k" in plugin_modules()
    True
    """
    names = list(CORE_PLUGIN_MODULES)
    for pkg_name in packages:
        pkg = importlib.import_module(pkg_name)
        names += [f"{pkg_name}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    return names


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
        _loaded = True
    finally:
        _loading = False
