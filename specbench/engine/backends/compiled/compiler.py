"""Compiling the static-shape forward, once per shape, and the record of what it cost.

``StaticForward`` wraps the base model's forward (hidden states out; the output head runs after it, on the rows
that need logits) in ``torch.compile(fullgraph=True, dynamic=False)``: one graph per input shape, so per (row
bucket, cache capacity, whether intermediate layers are returned). A graph break is an error, in one line,
instead of a silently slower forward. ``CompileLog`` keeps each shape's compile seconds and whether a warm-up
compiled it (outside any timing) or its first use (``first_use``: inside a generation, when timed, or in the
lossless check's margins or a cost profile, outside the timing; the manifest keeps the count).

Example: ``forward = StaticForward(model.base_model, CompileOptions(compiler="eager"))``;
``forward(ids, positions, mask, cache, with_layers=False)`` -> ``(last_hidden [1, b, h], None)``; the first call
of each shape compiles it and ``forward.log.entries[-1]`` holds ``{"rows": b, "capacity": 512, ...}``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from specbench.engine.backends.compiled.options import CompileOptions
from specbench.errors import ConfigError

RECOMPILE_LIMIT = 64  # shapes per forward: 7 buckets x a few capacities x 2 variants, below dynamo's default 8


@dataclass
class CompileLog:
    """Every shape compiled: rows, capacity, layers returned, seconds, and where (``warm-up`` or ``first use``)."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """What the manifest keeps: the shapes, their total seconds, and how many were compiled by their first use."""
        return {"shapes": len(self.entries), "seconds": round(sum(e["seconds"] for e in self.entries), 3),
                "first_use": sum(e["where"] == "first use" for e in self.entries), "entries": self.entries}


class LayerTap:
    """Every decoder layer's input, kept while ``active`` by a forward pre-hook on each layer.

    transformers collects ``output_hidden_states`` under a context manager dynamo cannot capture, so the
    intermediate states are taken here instead: the input of layer ``i`` is hidden state ``i`` (0: the embeddings'
    output), as ``TargetModel`` numbers them; the final-norm state is the forward's own output. Inactive, a hook
    returns at once (the model may be shared with an eager backend)."""

    def __init__(self, base: torch.nn.Module) -> None:
        n = int(getattr(base.config, "num_hidden_layers", None) or getattr(base.config, "n_layer", 0))
        layers = next((m for m in base.children() if isinstance(m, torch.nn.ModuleList) and len(m) == n), None)
        if layers is None:
            raise ConfigError(f"--backend compiled: found no list of {n} decoder layers in {type(base).__name__}")
        self.active = False
        self.states: list[torch.Tensor] = []
        for layer in layers:
            layer.register_forward_pre_hook(self._keep, with_kwargs=True)

    def _keep(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        if self.active:
            self.states.append(args[0] if args else kwargs["hidden_states"])


def _capture(base: torch.nn.Module, tap: LayerTap | None) -> Any:
    def forward(input_ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor,
                cache: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
        if tap is not None:
            tap.active, tap.states = True, []
        out = base(input_ids=input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                   use_cache=True)
        states = None
        if tap is not None:  # [1, b, L + 1, h]: each layer's input, then the final-norm state
            states = torch.stack([*tap.states, out.last_hidden_state], 2)
            tap.active, tap.states = False, []
        return out.last_hidden_state, states
    return forward


class StaticForward:
    """The base model's forward, compiled per shape (module docstring)."""

    def __init__(self, base: torch.nn.Module, options: CompileOptions) -> None:
        self.options = options
        self.log = CompileLog()
        self._seen: set[tuple[int, int, bool]] = set()
        self._base = base
        self._fns: dict[bool, Any] = {False: self._compiled(_capture(base, None))}

    def _compiled(self, fn: Any) -> Any:
        opts = self.options
        if opts.compiler == "none":
            return fn
        limit = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else "cache_size_limit"
        setattr(torch._dynamo.config, limit, max(getattr(torch._dynamo.config, limit), RECOMPILE_LIMIT))
        if opts.compiler == "inductor":
            return torch.compile(fn, backend="inductor", mode=opts.mode, fullgraph=True, dynamic=False)
        return torch.compile(fn, backend=opts.compiler, fullgraph=True, dynamic=False)

    def seen(self, rows: int, capacity: int, with_layers: bool) -> bool:
        """Whether this shape has been compiled (run once) already."""
        return (rows, capacity, with_layers) in self._seen

    def __call__(self, input_ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, cache: Any, *,
                 with_layers: bool, where: str = "first use") -> tuple[torch.Tensor, torch.Tensor | None]:
        key = (int(input_ids.shape[1]), int(cache.capacity), with_layers)
        first = key not in self._seen
        if self.options.graphs:  # each replay may overwrite the last one's outputs: the caller copies them first
            torch.compiler.cudagraph_mark_step_begin()
        t = time.perf_counter()
        if with_layers and True not in self._fns:  # (hooks on the model only once a drafter reads its layers)
            self._fns[True] = self._compiled(_capture(self._base, LayerTap(self._base)))
        try:
            out = self._fns[with_layers](input_ids, positions, mask, cache)
        except Exception as error:  # (dynamo's errors are many lines: the first names the break)
            if not first or self.options.compiler == "none":
                raise
            head = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ConfigError(f"--backend compiled: torch.compile ({self.options.compiler}, fullgraph) could not "
                              f"capture this model's forward: {head}") from error
        if first:
            if input_ids.device.type == "cuda":
                torch.cuda.synchronize(input_ids.device)
            self._seen.add(key)
            self.log.entries.append({"rows": key[0], "capacity": key[1], "layers": with_layers,
                                     "seconds": round(time.perf_counter() - t, 3), "where": where})
        return out
