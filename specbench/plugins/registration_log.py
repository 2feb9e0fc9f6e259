"""Every registration into any registry, in order: how a plugin loader learns what one plugin registered.

The registries append here (``registry.Registry.add``); ``outside.py`` compares the log's length before and after
importing a plugin. A module of its own, below both, so that neither imports the other.

>>> start = len(ADDED)
>>> note("method", "my-drafter")
>>> since(start)
['method my-drafter']
>>> del ADDED[start:]
"""
from __future__ import annotations

ADDED: list[tuple[str, str]] = []  # (registry kind, name)


class DuplicateNameError(ValueError):
    """A second registration under a name that exists (a plugin reusing a built-in method's name)."""


def note(kind: str, name: str) -> None:
    ADDED.append((kind, name))


def since(start: int) -> list[str]:
    """``"KIND NAME"`` for each registration after position ``start`` of the log."""
    return [f"{kind} {name}" for kind, name in ADDED[start:]]
