"""The compiled backend's target: each forward padded to a row bucket and run through the compiled forward.

A step of ``n`` rows after ``n_ctx`` cached positions runs as ``b = row_bucket(n)`` rows (``padding.py``): the
``n`` real ones, then ``b - n`` padding rows whose outputs are dropped. The mask ``[1, 1, b, capacity]`` lets a
real row see the context ``[0, n_ctx)`` and its ancestors among the step's rows; every other column, stale rows
of earlier steps included, is hidden. A chain longer than the largest bucket (a prompt's prefill) runs in chunks of it; a tree wider than
it, as one forward of a wider bucket (``buckets.row_bucket``), compiled when first met. The output head runs outside
the compiled graph, on the rows that need logits.

Example: context of 5, a 3-row chain, bucket 4, capacity 512: row 0 sees columns 0..5, row 1 0..6, row 2 0..7,
the padding row column 8 alone; the cache writes columns 5..8 and keeps ``length`` 8.
"""
from __future__ import annotations

from typing import Any

import torch

from specbench.engine.attention_layout import additive
from specbench.engine.backends.compiled.buckets import capacity_bucket, chunks
from specbench.engine.backends.compiled.compiler import StaticForward
from specbench.engine.backends.compiled.options import CompileOptions
from specbench.engine.backends.compiled.padding import pad_step
from specbench.engine.backends.compiled.static_cache import StaticKVCache, layer_shapes
from specbench.engine.backends.contract import Forward, TargetCaps
from specbench.engine.backends.target import TargetModel
from specbench.errors import ConfigError


class CompiledTarget:
    """``contract.Target`` over a static-shape compiled forward (module docstring); one sequence at a time."""

    def __init__(self, model: torch.nn.Module, caps: TargetCaps, options: CompileOptions) -> None:
        eager = TargetModel(model, caps)  # (the head, the layout and the layer count, as the torch backends read them)
        if eager.layout.windowed:
            raise ConfigError(f"--backend compiled: {eager.layout.name} attention is not supported yet "
                              "(its static cache keeps every position); use --backend fast")
        self.model, self.caps, self.options = model, caps, options
        self.head, self.device, self.dtype, self.num_layers = eager.head, eager.device, eager.dtype, eager.num_layers
        self.check_layers = eager.check_layers
        self.shapes = layer_shapes(model.base_model)
        self.compiled = StaticForward(model.base_model, options)
        self._pool: dict[tuple[str, int], StaticKVCache] = {}
        self._variants: set[bool] = set()  # whether intermediate layers were returned, per warm-up asked

    @property
    def max_rows(self) -> int:
        return self.options.buckets[-1]

    def _cache(self, kind: str, positions: int) -> StaticKVCache:
        """The pooled cache of ``kind`` holding ``positions`` plus a padded bucket, emptied: one per capacity, so
        its buffers keep their addresses across generations (CUDA graphs replay on them)."""
        capacity = capacity_bucket(positions + self.max_rows)
        cache = self._pool.get((kind, capacity))
        if cache is None:
            cache = self._pool[(kind, capacity)] = StaticKVCache(self.shapes, capacity, self.device, self.dtype)
        cache.reset()
        return cache

    def new_cache(self, positions: int) -> StaticKVCache:
        """A generation's cache for up to ``positions`` positions."""
        return self._cache("generation", positions)

    def scratch_cache(self, capacity: int) -> StaticKVCache:
        """A cache for a one-off forward outside a generation (``margins.margin_at``)."""
        return self._cache("scratch", capacity)

    @torch.inference_mode()  # (as every generation runs: a grad-mode trace would be compiled again, and the
    # pooled caches are inference tensors, written in place)
    def warm_up(self, positions: int, with_layers: tuple[bool, ...] = (False,), repeats: int = 3) -> None:
        """Compile (and, with CUDA graphs, record) every row bucket for the cache a generation of ``positions``
        gets, outside any timing: ``repeats`` runs per shape (CUDA graph trees record on the second, replay on
        the third). Shapes compiled already cost nothing. Every variant asked before is warmed too: the runner
        warms a job without knowing its drafter, and a drafter reading intermediate layers has asked once."""
        cache = self._cache("generation", positions)
        self._variants.update(with_layers)
        for flag in sorted(self._variants):
            for rows in self.options.buckets:
                if self.compiled.seen(rows, cache.capacity, flag):
                    continue
                ids = torch.zeros(1, rows, dtype=torch.long, device=self.device)
                for _ in range(repeats):
                    self._padded(ids, cache, 0, None, None, with_layers=flag, where="warm-up")
        cache.reset()

    def forward(self, input_ids: torch.Tensor, cache: Any, n_ctx: int, position_offsets: torch.Tensor | None = None,
                ancestor_mask: torch.Tensor | None = None,
                last_logits_only: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """(hidden [n, h], logits [n, V] or [1, V]) as ``TargetModel.forward``."""
        out = self.run(input_ids, cache, n_ctx, position_offsets, ancestor_mask, last_logits_only=last_logits_only)
        return out.hidden, out.logits

    def run(self, input_ids: torch.Tensor, cache: Any, n_ctx: int, position_offsets: torch.Tensor | None = None,
            ancestor_mask: torch.Tensor | None = None, *, last_logits_only: bool = False,
            layers: tuple[int, ...] = (), hidden: bool = True) -> Forward:
        """``contract.Target.run``: ``input_ids`` [1, n] after ``n_ctx`` cached positions, in buckets."""
        n = int(input_ids.shape[1])
        tree = position_offsets is not None or ancestor_mask is not None
        pieces = [(0, n)] if tree else chunks(n, self.options.buckets)  # (a tree past every bucket: one wider shape)
        outs = [self._padded(input_ids[:, a:b], cache, n_ctx + a, position_offsets, ancestor_mask,
                             with_layers=bool(layers)) for a, b in pieces]
        cache.length = n_ctx + n
        states = torch.cat([o[0] for o in outs])  # [n, h]
        chosen = torch.cat([o[1][:, list(layers)] for o in outs]) if layers else None  # [n, len(layers), h]
        return Forward(states, self.head(states[-1:] if last_logits_only else states), chosen)

    def _padded(self, ids: torch.Tensor, cache: StaticKVCache, n_ctx: int, offsets: torch.Tensor | None,
                ancestors: torch.Tensor | None, *, with_layers: bool,
                where: str = "first use") -> tuple[torch.Tensor, torch.Tensor | None]:
        """One forward of ``ids`` [1, m] padded to its bucket: (hidden [m, h], all layers' states [m, L + 1, h])."""
        m = int(ids.shape[1])
        step = pad_step(ids.to(self.device), n_ctx, cache.capacity, self.options.buckets, offsets, ancestors)
        cache.place(n_ctx, step.bucket)
        last, states = self.compiled(step.ids, step.positions, additive(step.allowed[None], self.dtype), cache,
                                     with_layers=with_layers, where=where)
        # (copies: a CUDA graph's next replay overwrites its outputs)
        return last[0, :m].clone(), None if states is None else states[0, :m].clone()
