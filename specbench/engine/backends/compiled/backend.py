"""The ``compiled`` engine backend (``contract.Backend``): one ``CompiledTarget`` per model, compiled per shape.

The model runs with its linears as loaded (``fast``'s oneDNN packing is undone: the compiler fuses what it
fuses). ``warm_up`` compiles every row bucket for a generation's cache before the generation is timed (the
engine calls it before its clock starts, the runner before a job's), and ``describe`` records the options and
every shape compiled, with its seconds, in the manifest.

Example: ``Engine(model, stops, backend="compiled")`` decodes with static shapes; after a run,
``engine.backend.describe(model)["compile"]`` -> ``{"shapes": 7, "seconds": 41.2, "first_use": 0, ...}``.
"""
from __future__ import annotations

import os
import weakref
from typing import Any

import torch

from specbench.engine.backends.compiled.buckets import row_bucket
from specbench.engine.backends.compiled.options import CompileOptions
from specbench.engine.backends.compiled.spec import COMPILED, NAME
from specbench.engine.backends.compiled.target import CompiledTarget
from specbench.engine.backends.packed_linear import is_packed, unpack_linears
from specbench.engine.backends.torch_backends import STATE_ATTR


class CompiledBackend:
    """Static shapes compiled by ``torch.compile`` on ``device`` in ``dtype`` (module docstring)."""

    name = NAME
    packed = False
    caps = COMPILED.caps

    def __init__(self, options: CompileOptions) -> None:
        self.options = options
        self._targets: weakref.WeakKeyDictionary[torch.nn.Module, CompiledTarget] = weakref.WeakKeyDictionary()

    @property
    def key(self) -> str:
        """Its cost profile's key: the compiler and mode change T(n)."""
        return f"{NAME}-{self.options.compiler}-{self.options.mode}"

    def prepare(self, model: torch.nn.Module) -> None:
        """Plain linears (idempotent): a model ``fast`` packed is unpacked."""
        if getattr(model, STATE_ATTR, None) == (NAME,):
            return
        if is_packed(model):
            unpack_linears(model)
        setattr(model, STATE_ATTR, (NAME,))

    def target(self, model: torch.nn.Module) -> CompiledTarget:
        """The model's compiled target, made once (its compiled shapes and cache pool are kept)."""
        found = self._targets.get(model)
        if found is None:
            found = self._targets[model] = CompiledTarget(model, self.caps, self.options)
        return found

    def new_cache(self, model: torch.nn.Module, capacity: int) -> Any:
        """A generation's static cache for up to ``capacity`` positions (pooled per capacity)."""
        return self.target(model).new_cache(capacity)

    def warm_up(self, model: torch.nn.Module, positions: int, layers: bool = False) -> None:
        """Compile every row bucket for a generation of ``positions`` positions (``layers``: the variant that
        returns intermediate layers' states too), before any timing."""
        self.prepare(model)
        self.target(model).warm_up(positions, (False, True) if layers else (False,))

    def padded_rows(self, rows: int) -> int:
        """The rows a step's forward of ``rows`` pays for (``contract.PadsRows``): its bucket (past the largest, the
        wider bucket a tree gets; a prompt's chunks are not a step's)."""
        return row_bucket(rows, self.options.buckets)

    def describe(self, model: torch.nn.Module | None = None) -> dict[str, Any]:
        """The options and, once it has run, every shape compiled (``compiler.CompileLog.summary``)."""
        info: dict[str, Any] = {"name": NAME, "kv_cache": "static (fixed capacity, power of two)",
                                "linear": "torch (as loaded)", "compiler": self.options.compiler,
                                "mode": self.options.mode, "fullgraph": True, "row_buckets": list(self.options.buckets)}
        found = None if model is None else self._targets.get(model)
        if found is not None:
            info["compile"] = found.compiled.log.summary()
        return info


def create(name: str, device: torch.device, dtype: torch.dtype, gguf: Any = None,
           threads: int | None = None) -> CompiledBackend:
    """The registry's factory: the options from the environment (``options.py``)."""
    return CompiledBackend(CompileOptions.from_env(os.environ, torch.device(device).type))
