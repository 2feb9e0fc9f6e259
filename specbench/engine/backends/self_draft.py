"""The target as its own draft model: what the engine hands a drafter that ``drafts_with_target`` (SWIFT).

Such a drafter has no model of its own: it runs the generation's target with some decoder sub-layers skipped
(``layer_skip.py``) over the generation's own KV cache, whose context the full target wrote. ``SelfDraft`` is the
only way it reaches them, and it keeps the cache the engine's:

- ``extend(ids, skip)``: a draft forward continuing the context and the rows drafted so far this step (one skip
  set per step: a skipped attention writes no keys, so its layer's cache falls behind the kept layers');
- ``score(ids, start, skip)``: a teacher-forced forward of ``ids`` at positions ``start..`` that sees only the
  context's first ``start`` columns (SWIFT's matchness of a candidate layer set over the tokens generated after
  the prompt); the cache is as before afterwards;
- ``rewind()``: the engine's, after ``propose``: every layer is cut back to the context, so verification writes
  its rows where the draft's were.

On the batched loop's cache (``batch_cache.py``) the view writes one slot's columns past its length and never moves
that length: what it wrote there stays behind the slot's valid columns, masked, until later rows overwrite it.

Example: context of 10 positions, root 7: ``extend([7], s)`` -> logits ``[1, V]`` of position 10, the draft's
guess ``d1``; ``extend([d1], s)`` -> position 11; the engine's ``rewind()`` leaves 10 positions again.
"""
from __future__ import annotations

from typing import Any

import torch

from specbench.engine.backends.batch_cache import BatchedCache, StepPlan
from specbench.engine.backends.contract import SkippingTarget, require
from specbench.engine.backends.kv_cache import trim_cache
from specbench.engine.backends.layer_skip import SkipSet


class SelfDraft:
    """One step's draft forwards of the target over the generation's cache (module docstring).

    ``target``: a ``SkippingTarget`` (its ``caps.skips_layers`` True; a one-line ``ConfigError`` otherwise);
    ``n_ctx``: the positions the cache holds (the root is not among them); ``slot``: the sequence's slot in a
    ``BatchedCache`` (None: a single sequence's cache).
    """

    def __init__(self, target: Any, cache: Any, n_ctx: int, slot: int | None = None) -> None:
        self.target = require(target, SkippingTarget)
        self.cache = cache
        self.n_ctx = int(n_ctx)
        self.slot = slot
        self.num_layers = int(target.num_layers)
        self.drafted = 0  # rows ``extend`` wrote after the context this step
        self.skip: SkipSet | None = None  # the skip set those rows were written with
        self.forwards = 0  # draft forwards run through this view (extend and score)
        self._dirty = False  # ``extend`` wrote rows that ``rewind`` must cut

    def extend(self, ids: list[int], skip: SkipSet) -> torch.Tensor:
        """Logits ``[len(ids), V]`` of ``ids`` after the context and the rows drafted so far, under ``skip``."""
        if self.drafted and skip != self.skip:
            raise ValueError("a draft step keeps one skip set: the skipped layers' caches lag behind the others")
        start, n = self.n_ctx + self.drafted, len(ids)
        visible = torch.ones(n, start + n, dtype=torch.bool, device=self.target.device).tril(start)
        self._dirty = True  # (a forward that fails halfway has still written some layers' rows: rewind cuts them)
        logits = self._run(ids, start, visible, start, skip)
        self.drafted += n
        self.skip = skip
        return logits

    def score(self, ids: list[int], start: int, skip: SkipSet) -> torch.Tensor:
        """Logits ``[len(ids), V]`` of ``ids`` at positions ``start..``, each row seeing the context's first
        ``start`` columns and the rows before it (teacher forcing); the cache is left as it was.

        Example: prompt of 40 positions, 60 tokens generated: ``score(generated[:51], 40, s)`` scores how often
        the skipped target's argmax at each row equals the next generated token."""
        if self.drafted:
            raise ValueError("score runs before a step's draft: the drafted rows would be lost")
        if not 0 <= start <= self.n_ctx:
            raise ValueError(f"score: start {start} outside the context's 0..{self.n_ctx} positions")
        n = len(ids)
        device = self.target.device
        visible = torch.zeros(n, self.n_ctx + n, dtype=torch.bool, device=device)
        visible[:, :start] = True
        visible[:, self.n_ctx:] = torch.ones(n, n, dtype=torch.bool, device=device).tril()
        try:
            return self._run(ids, start, visible, self.n_ctx, skip)
        finally:
            self._cut()

    def rewind(self) -> None:
        """Every layer back to the context (the engine calls it after ``propose``)."""
        if self._dirty:
            self._cut()
        self.drafted, self.skip, self._dirty = 0, None, False

    def _run(self, ids: list[int], position: int, visible: torch.Tensor, column: int, skip: SkipSet) -> torch.Tensor:
        """The forward of ``ids`` at positions ``position..``, written at columns ``column..`` of the cache."""
        device = self.target.device
        n = len(ids)
        if isinstance(self.cache, BatchedCache):  # this slot alone, at its own columns past its length
            cols = column + torch.arange(n, device=device)[None, :]
            self.cache.plan = StepPlan(self.slot, self.slot + 1, cols, column + n, column + n + 1)
        input_ids = torch.tensor([ids], dtype=torch.long, device=device)
        positions = position + torch.arange(n, device=device)
        self.forwards += 1
        return self.target.run_skipping(input_ids, self.cache, positions, visible, skip)

    def _cut(self) -> None:
        if not isinstance(self.cache, BatchedCache):  # (a slot's length never moved)
            trim_cache(self.cache, self.n_ctx, [])
