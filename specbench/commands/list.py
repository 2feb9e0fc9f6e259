"""``specbench list``: registered methods (with their hyper-parameters), tasks and corpora."""
from __future__ import annotations

import argparse
import dataclasses

from specbench.plugins.outside import loaded_plugins
from specbench.plugins.registry import CORPORA, METHODS, TASK_SOURCES, TASKS
from specbench.serving.settings import LLAMA_SETTINGS


def first_line(doc: str | None) -> str:
    """A docstring's first line; "" for none (a plugin's corpus may have none).

    >>> first_line("  Reads a corpus.  "), first_line(None)
    ('Reads a corpus.', '')
    """
    return (doc or "").strip().split("\n", 1)[0]


def list_command(args: argparse.Namespace) -> int:
    print("methods:")
    outside = {entry: plugin["spec"] for plugin in loaded_plugins() for entry in plugin["registered"]}
    for name in METHODS.names():
        spec = METHODS.get(name)
        fields = ", ".join(f"{f.name}={f.default!r}" for f in dataclasses.fields(spec.config_cls)
                           if f.default is not dataclasses.MISSING)
        origin = f"\n  {'':10s} plugin: {outside[f'method {name}']}" if f"method {name}" in outside else ""
        print(f"  {name:10s} {spec.description}" + (f"\n  {'':10s} options: {fields}" if fields else "") + origin)
    print(f"  {'':10s} every drafting method also takes budget=default|auto (auto: verify only the part of each "
          "draft worth its cost on this machine); a label NAME@VARIANT runs a second setting, NAME@auto = budget=auto")
    print("tasks:")
    for name in TASKS.names():
        task = TASKS.get(name)
        print(f"  {name:10s} {task.subtask} (v{task.version})")
    for prefix in TASK_SOURCES.names():  # your own prompts: ``--tasks PREFIX:SPEC``
        print(f"  {prefix + ':...':10s} {first_line(TASK_SOURCES.get(prefix).__doc__)}")
    print("engine settings (--engine llama-server --methods engine:SETTING; engine:off, the baseline, is added):")
    for name, setting in LLAMA_SETTINGS.items():
        print(f"  {'engine:' + name:20s} --spec-type {setting.spec_type}: {setting.summary}")
    print(f"  {'':20s} options: any llama-server flag as KEY=VALUE (engine:ngram.spec-ngram-simple-size-n=3), "
          "model=PATH.gguf, flags='...'; --engine openai:URL: any setting name, url=http://HOST:PORT of its server")
    print("corpora:")
    for name in CORPORA.names():
        print(f"  {name:14s} {first_line(CORPORA.get(name).__doc__)}")
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("list", help="list registered methods, tasks and corpora")
    p.set_defaults(func=list_command)
