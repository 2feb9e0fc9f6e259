"""Name-keyed registries: methods, tasks, corpora, datastore actions and trainers.

``@register_method("pld", PLDConfig)`` on a factory ``(config, env) -> Drafter | None``;
``@register_task("gsm8k")`` on a task class; ``@register_corpus("sharegpt")`` on a text-entry
generator. Duplicate names raise; unknown names raise ``UnknownNameError`` with a suggestion.
Reading any registry first runs the plugin discovery of ``specbench.plugins.discovery`` (once).

>>> r = Registry("colour", discover=lambda: None)
>>> r.add("red", 1)
>>> r.get("rde")
Traceback (most recent call last):
...
specbench.errors.UnknownNameError: unknown colour 'rde'; did you mean 'red'? (known: red)
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, TypeVar

from specbench.catalog import task_label
from specbench.errors import UnknownNameError
from specbench.plugins import registration_log
from specbench.plugins.discovery import load_plugins
from specbench.plugins.registration_log import DuplicateNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A dict of name -> entry that refuses duplicates and explains unknown names."""

    def __init__(self, kind: str, discover: Callable[[], None] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._discover = discover or load_plugins

    def add(self, name: str, entry: T) -> None:
        if name in self._entries:
            raise DuplicateNameError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        registration_log.note(self.kind, name)

    def get(self, name: str) -> T:
        self._discover()
        if name not in self._entries:
            hint = difflib.get_close_matches(name, list(self._entries), n=1)
            msg = f"unknown {self.kind} {name!r}"
            msg += f"; did you mean {hint[0]!r}?" if hint else ""
            msg += f" (known: {', '.join(sorted(self._entries)) or 'none'})"
            raise UnknownNameError(msg)
        return self._entries[name]

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        self._discover()
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
class PluginCommand:
    """A subcommand a method module contributes (``specbench datastore <name>``, ``specbench train <name>``)."""

    name: str
    help: str
    add_arguments: Callable[[Any], None]
    run: Callable[[Any], int]


DatastoreAction = PluginCommand  # the name datastore actions were registered under before trainers existed

METHODS: Registry[MethodSpec] = Registry("method")
TASKS: Registry[Any] = Registry("task")
CORPORA: Registry[Callable[..., Iterator[str]]] = Registry("corpus")
DATASTORE_ACTIONS: Registry[DatastoreAction] = Registry("datastore action")
DATASTORE_BUILDERS: Registry[Callable[[Any], int]] = Registry("datastore kind")
TRAINERS: Registry[PluginCommand] = Registry("trainer")
TASK_SOURCES: Registry[Callable[[str], Any]] = Registry("task source")
FIRST_USE_BUILDS: Registry[Callable[[Any, Any], Any]] = Registry("first-use build check")
MODEL_REQUIREMENTS: Registry[Callable[[Any, Any], Any]] = Registry("model requirement")


def register_method(name: str, config_cls: type) -> Callable:
    """Decorator for a drafter factory ``(config, env: MethodEnv) -> Drafter | None``."""

    def wrap(factory: Callable) -> Callable:
        doc = (factory.__doc__ or "").strip().splitlines()
        METHODS.add(name, MethodSpec(name, config_cls, factory, doc[0] if doc else name))
        return factory

    return wrap


def register_task(name: str) -> Callable:
    """Decorator for a task class (see ``specbench.prompts.task.Task``)."""

    def wrap(cls: type) -> type:
        cls.name = name
        if not cls.__dict__.get("subtask"):  # built-in tasks take their label from the catalog
            cls.subtask = task_label(name)
        TASKS.add(name, cls)
        return cls

    return wrap


def register_task_source(prefix: str) -> Callable:
    """Decorator for a factory ``(spec) -> Task`` behind task names ``PREFIX:SPEC`` (``jsonl:PATH``)."""

    def wrap(factory: Callable[[str], Any]) -> Callable[[str], Any]:
        TASK_SOURCES.add(prefix, factory)
        return factory

    return wrap


def make_task(name: str) -> Any:
    """A task instance for ``name``: a registered task, or ``PREFIX:SPEC`` built by its task source.

    ``"gsm8k"`` -> ``TASKS["gsm8k"]()``; ``"jsonl:my/q.jsonl"`` -> ``TASK_SOURCES["jsonl"]("my/q.jsonl")``.
    """
    prefix, sep, spec = name.partition(":")
    if not sep:
        return TASKS.get(name)()
    return TASK_SOURCES.get(prefix)(spec)


def register_corpus(name: str) -> Callable:
    """Decorator for a corpus loader ``(data_dir: Path | None) -> Iterator[str]`` of text entries."""

    def wrap(fn: Callable) -> Callable:
        CORPORA.add(name, fn)
        return fn

    return wrap


def register_datastore_action(action: PluginCommand) -> PluginCommand:
    """Add a ``specbench datastore <name>`` subcommand (e.g. CREST's ``compact``)."""
    DATASTORE_ACTIONS.add(action.name, action)
    return action


def register_datastore_builder(kind: str) -> Callable:
    """Decorator for ``build(args) -> exit code`` behind ``specbench datastore build --kind KIND``."""

    def wrap(fn: Callable[[Any], int]) -> Callable[[Any], int]:
        DATASTORE_BUILDERS.add(kind, fn)
        return fn

    return wrap


def register_first_use_build(name: str) -> Callable:
    """Decorator for ``(config, env: MethodEnv) -> PendingBuild | None``: what method ``name``'s factory will
    build or train on first use for ``env``'s task (a ``specbench.run.estimate.PendingBuild``), None when it
    is cached or given. Read before any drafter is built, so a run says up front how long it will take."""

    def wrap(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        FIRST_USE_BUILDS.add(name, fn)
        return fn

    return wrap


def register_model_requirement(name: str) -> Callable:
    """Decorator for ``(config, model) -> str | None``: why method ``name`` with ``config`` cannot run on the loaded
    target ``model`` (None: it can), e.g. ``"GPT2LMHeadModel has no ... (Llama-style models only)"``. The runner asks
    every method's before it builds any drafter, so a method that cannot run is refused in one line before the
    others' first-use builds take their minutes (``run/method_requirements.py``)."""

    def wrap(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        MODEL_REQUIREMENTS.add(name, fn)
        return fn

    return wrap


def register_trainer(trainer: PluginCommand) -> PluginCommand:
    """Add a ``specbench train <name>`` subcommand (e.g. ReDrafter's head training)."""
    TRAINERS.add(trainer.name, trainer)
    return trainer
