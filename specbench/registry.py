"""Name-keyed registries: methods, tasks, corpora, and datastore actions.

``@register_method("pld", PLDConfig)`` on a factory ``(config, env) -> Drafter | None``;
``@register_task("gsm8k")`` on a task class; ``@register_corpus("sharegpt")`` on a text-entry
generator. Duplicate names raise; unknown names raise ``UnknownNameError`` with a suggestion.
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """An unknown registry key; ``str()`` is a one-line message with a "did you mean" hint."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """A dict of name -> entry that refuses duplicates and explains unknown names."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry

    def get(self, name: str) -> T:
        _load_plugins()
        if name not in self._entries:
            hint = difflib.get_close_matches(name, list(self._entries), n=1)
            msg = f"unknown {self.kind} {name!r}"
            msg += f"; did you mean {hint[0]!r}?" if hint else ""
            msg += f" (known: {', '.join(sorted(self._entries)) or 'none'})"
            raise UnknownNameError(msg)
        return self._entries[name]

    def names(self) -> list[str]:
        _load_plugins()
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        _load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its config dataclass and a factory building its drafter."""

    name: str
    config_cls: type
    factory: Callable[[Any, Any], Any]
    description: str


@dataclass(frozen=True)
class DatastoreAction:
    """A ``specbench datastore <action>`` subcommand contributed by a method module."""

    name: str
    help: str
    add_arguments: Callable[[Any], None]
    run: Callable[[Any], int]


METHODS: Registry[MethodSpec] = Registry("method")
TASKS: Registry[Any] = Registry("task")
CORPORA: Registry[Callable[..., Iterator[str]]] = Registry("corpus")
DATASTORE_ACTIONS: Registry[DatastoreAction] = Registry("datastore action")
DATASTORE_BUILDERS: Registry[Callable[[Any], int]] = Registry("datastore kind")


def register_method(name: str, config_cls: type) -> Callable:
    """Decorator for a drafter factory ``(config, env: MethodEnv) -> Drafter | None``."""

    def wrap(factory: Callable) -> Callable:
        doc = (factory.__doc__ or "").strip().splitlines()
        METHODS.add(name, MethodSpec(name, config_cls, factory, doc[0] if doc else name))
        return factory

    return wrap


def register_task(name: str) -> Callable:
    """Decorator for a task class (see ``specbench.tasks_base.Task``)."""

    def wrap(cls: type) -> type:
        cls.name = name
        TASKS.add(name, cls)
        return cls

    return wrap


def register_corpus(name: str) -> Callable:
    """Decorator for a corpus loader ``(data_dir: Path | None) -> Iterator[str]`` of text entries."""

    def wrap(fn: Callable) -> Callable:
        CORPORA.add(name, fn)
        return fn

    return wrap


def register_datastore_action(action: DatastoreAction) -> DatastoreAction:
    """Add a ``specbench datastore <name>`` subcommand (e.g. CREST's ``compact``)."""
    DATASTORE_ACTIONS.add(action.name, action)
    return action


def register_datastore_builder(kind: str) -> Callable:
    """Decorator for ``build(args) -> exit code`` behind ``specbench datastore build --kind KIND``."""

    def wrap(fn: Callable[[Any], int]) -> Callable[[Any], int]:
        DATASTORE_BUILDERS.add(kind, fn)
        return fn

    return wrap


_loaded = False


def _load_plugins() -> None:
    """Import every module of ``methods/``, ``tasks/`` and the corpora so their decorators run."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    importlib.import_module("specbench.corpora")
    for pkg_name in ("methods", "tasks"):
        pkg = importlib.import_module(pkg_name)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{pkg_name}.{mod.name}")
