"""A KV cache shared by a batch of sequences: one preallocated buffer, per-sequence ("slot") lengths.

Slot ``b`` holds its sequence's keys and values at columns ``[0, lengths[b])`` of row ``b`` of every
layer's buffer (``[slots, kv_heads, capacity, head_dim]``). A forward over slots ``lo..hi-1`` writes each
slot's new rows at its own columns (``BatchedCache.plan``: ``lengths[b] + i`` for row ``i``; padding rows
of a short slot land past its valid columns and are never attended to) and attention reads the first
``span`` columns of those slots; the engine's 4D mask says which columns each row may see.

Example: slots with lengths ``[3, 5]``, a step of 2 rows each: slot 0 writes columns 3-4, slot 1 columns
5-6, attention reads 7 columns of both; keeping rows ``[0]`` of slot 0 and ``[0, 1]`` of slot 1 leaves
lengths ``[4, 7]``. Keeping rows ``[0, 2]`` (a tree branch) gathers row 2 into place first.

Buffers start zeroed: columns past a slot's length may be read (and masked) before they are written,
and masked garbage must never be NaN.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
from transformers.cache_utils import Cache, CacheLayerMixin


@dataclass
class StepPlan:
    """Where the next forward writes and what it reads: slots ``lo..hi-1``, write columns ``[hi-lo, n]``."""

    lo: int
    hi: int
    cols: torch.Tensor  # [hi - lo, n] long: the column each new row is written to
    span: int  # columns attention reads (every slot's valid columns plus this step's rows)
    needed: int  # capacity the step needs


class BatchedLayer(CacheLayerMixin):
    """One decoder layer's keys and values for every slot, written in place."""

    is_compileable = False
    is_croppable = False
    is_sliding = False

    def __init__(self, owner: "BatchedCache") -> None:
        super().__init__()
        # a weak proxy: the cache holds its layers, and a strong reference back would make a cycle that
        # only the cyclic GC frees, keeping every finished batch's buffers alive until it runs
        self.owner = owner if isinstance(owner, weakref.ProxyTypes) else weakref.proxy(owner)
        self.capacity = owner.capacity
        self._k: torch.Tensor | None = None  # [slots, kv_heads, capacity, head_dim]
        self._v: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        _, h, _, d = key_states.shape
        slots = self.owner.slots
        self._k = key_states.new_zeros(slots, h, self.capacity, d)
        self._v = value_states.new_zeros(slots, h, self.capacity, value_states.shape[-1])
        self.is_initialized = True

    def reserve(self, needed: int) -> None:
        """Grow (doubling) to at least ``needed`` columns, keeping what is there."""
        if needed <= self.capacity:
            return
        cap = self.capacity
        while cap < needed:
            cap *= 2
        if self._k is None or self._v is None:  # not allocated yet: allocate at the new size
            self.capacity = cap
            return
        k = self._k.new_zeros(*self._k.shape[:2], cap, self._k.shape[-1])
        v = self._v.new_zeros(*self._v.shape[:2], cap, self._v.shape[-1])
        k[:, :, : self.capacity] = self._k
        v[:, :, : self.capacity] = self._v
        self._k, self._v, self.capacity = k, v, cap

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Scatter the step's rows (``[slots, h, n, d]``) to their columns; return the columns attention reads."""
        plan = self.owner.plan
        self.reserve(plan.needed)
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        assert self._k is not None and self._v is not None
        h, d = key_states.shape[1], key_states.shape[-1]
        index = plan.cols[:, None, :, None].expand(-1, h, -1, d)  # [slots, h, n, d]
        self._k[plan.lo : plan.hi].scatter_(2, index, key_states)
        self._v[plan.lo : plan.hi].scatter_(2, index, value_states)
        self.keys = self._k[plan.lo : plan.hi, :, : plan.span]
        self.values = self._v[plan.lo : plan.hi, :, : plan.span]
        return self.keys, self.values

    def gather(self, lo: int, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Move columns ``src`` to ``dst`` (``[slots, k]`` each) within slots ``lo..``: the accepted path."""
        if self._k is None or self._v is None:
            return
        for buf in (self._k, self._v):
            view = buf[lo : lo + src.shape[0]]
            h, d = view.shape[1], view.shape[-1]
            moved = view.gather(2, src[:, None, :, None].expand(-1, h, -1, d))  # copies first: overlap is safe
            view.scatter_(2, dst[:, None, :, None].expand(-1, h, -1, d), moved)

    def copy_slot(self, src: int, dst: int, length: int) -> None:
        if self._k is not None and self._v is not None:
            self._k[dst, :, :length] = self._k[src, :, :length]
            self._v[dst, :, :length] = self._v[src, :, :length]

    def get_seq_length(self) -> int:
        return max(self.owner.lengths, default=0)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.owner.plan.span if self.owner.plan is not None else query_length, 0

    def get_max_length(self) -> int:
        return -1


class BatchedCache(Cache):
    """The KV cache of ``slots`` sequences decoded together (``batch_loop.py``); one ``BatchedLayer`` per layer."""

    def __init__(self, slots: int, capacity: int = 256) -> None:
        self.slots = int(slots)
        self.capacity = int(capacity)
        self.lengths = [0] * self.slots
        self.plan: StepPlan | None = None
        owner = weakref.proxy(self)  # no cycle through the layer factory either (see BatchedLayer)
        super().__init__(layer_class_to_replicate=lambda: BatchedLayer(owner))

    def plan_step(self, lo: int, hi: int, rows: int, device: torch.device) -> StepPlan:
        """Before a forward of ``rows`` rows (padded) for each of slots ``lo..hi-1``: each slot's write columns.

        The scratch column past every write (``needed - 1``) takes the padding of ``keep``'s gathers.
        """
        starts = torch.tensor(self.lengths[lo:hi], dtype=torch.long, device=device)
        cols = starts[:, None] + torch.arange(rows, device=device)[None, :]  # [slots, rows]
        span = max(self.lengths[lo:hi]) + rows
        self.plan = StepPlan(lo, hi, cols, span, span + 1)
        return self.plan

    def keep(self, lo: int, kept_rows: list[list[int]]) -> None:
        """After verification: slot ``lo + j`` keeps its context plus its rows ``kept_rows[j]`` (in order)."""
        moves = [(j, rows) for j, rows in enumerate(kept_rows) if rows != list(range(len(rows)))]
        if moves:
            device = next((layer.device for layer in self.layers if layer.is_initialized), None)
            width = max(len(rows) for _, rows in moves)
            scratch = self.plan.needed - 1 if self.plan is not None else 0
            src = [[scratch] * width for _ in kept_rows]  # padding moves the scratch column onto itself
            dst = [[scratch] * width for _ in kept_rows]
            for j, rows in moves:
                base = self.lengths[lo + j]
                src[j][: len(rows)] = [base + r for r in rows]
                dst[j][: len(rows)] = range(base, base + len(rows))
            src_t = torch.tensor(src, dtype=torch.long, device=device)  # [slots, width]
            dst_t = torch.tensor(dst, dtype=torch.long, device=device)
            for layer in self.layers:
                layer.gather(lo, src_t, dst_t)
        for j, rows in enumerate(kept_rows):
            self.lengths[lo + j] += len(rows)

    def move_slot(self, src: int, dst: int) -> None:
        """Slot ``src``'s sequence moves to slot ``dst`` (a finished sequence's slot is refilled this way)."""
        for layer in self.layers:
            layer.copy_slot(src, dst, self.lengths[src])
        self.lengths[dst] = self.lengths[src]
        self.lengths[src] = 0

    def clear_slot(self, slot: int) -> None:
        self.lengths[slot] = 0
