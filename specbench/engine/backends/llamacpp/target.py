"""The engine's target forward on llama.cpp: ``LlamaTarget.run`` (``TargetModel.run``'s contract) and the
per-generation ``LlamaCache`` that keeps the context plus the accepted path.

A pass over ``[root] + tree (+ auxiliary rows)`` becomes one llama.cpp batch: rows sorted by position,
each in the sequences ``seq_layout.py`` gives it (a sequence per tree leaf, plus what auxiliary rows
need), positions ``n_ctx + offset``. Before the pass the committed context (sequence 0) is copied into
every other sequence the pass uses, a change of metadata only. After acceptance the cache keeps the
accepted path as llama.cpp's speculative example does: the accepted node's home sequence, cut after it,
becomes sequence 0 and every other cell is freed. A chain (AR steps, chain drafts, the prompt) is all in
sequence 0, and keeping a prefix of it is one removal.

Example: context of 10 cells in sequence 0; a pass over root, ``a -> b`` and ``c`` uses sequences 0 and 1
(sequence 1 gets the 10 context cells first). The target accepts ``a``: rows ``[0, 1]``, whose home is
sequence 0: cells of sequence 0 from position 12 (b) go, then every cell outside sequence 0 (c's) -> 12 cells.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from specbench.engine.backends.llamacpp.context import LlamaContext
from specbench.engine.backends.llamacpp.seq_layout import SeqLayout, layout_sequences
from specbench.engine.backends.contract import Forward
from specbench.engine.backends.llamacpp.spec import LLAMACPP
from specbench.errors import ConfigError

_LAYOUTS = 256  # layouts remembered per target (drafters with a fixed tree reuse theirs every step)


class LlamaCache:
    """The KV state of one generation on a shared ``LlamaContext``: committed length and the last pass."""

    def __init__(self, ctx: LlamaContext, capacity: int) -> None:
        ctx.reserve(capacity)
        ctx.clear()
        self.ctx = ctx
        self.length = 0  # committed cells, all in sequence 0 at positions 0..length-1
        self._pending: tuple[int, int, SeqLayout | None] | None = None  # (n_ctx, rows, layout) of the last pass

    def get_seq_length(self) -> int:
        return self.length

    def settle(self, n_ctx: int) -> None:
        """Before a pass after ``n_ctx`` cells: a last pass the engine did not trim was accepted whole."""
        if self._pending is not None:
            start, rows, _ = self._pending
            self.trim(start, list(range(rows)) if n_ctx > start else [])
        if n_ctx != self.length:
            raise RuntimeError(f"a pass after {n_ctx} cached positions, but the llama.cpp cache holds {self.length}")

    def begin(self, n_ctx: int, rows: int, layout: SeqLayout | None) -> None:
        """A pass of ``rows`` rows after ``n_ctx`` cells is about to run: give every sequence it uses the context."""
        for s in range(1, layout.n_seqs if layout is not None else 1):
            self.ctx.seq_cp(0, s)
        self._pending = (n_ctx, rows, layout)

    def trim(self, n_ctx: int, rows: list[int]) -> None:
        """Keep cells ``[0, n_ctx)`` and the last pass's ``rows`` (a root-to-node path, root first)."""
        ctx, pending = self.ctx, self._pending
        if pending is None or pending[0] != n_ctx:  # (no pass since the last trim: only a prefix can be kept)
            ctx.seq_rm(-1, n_ctx + len(rows))
            self.length = min(self.length, n_ctx + len(rows))
            return
        layout = pending[2]
        many = layout is not None and layout.n_seqs > 1
        if not rows:
            ctx.seq_rm(-1, n_ctx)
            if many:
                ctx.seq_keep(0)
        else:
            home = layout.home(rows[-1]) if layout is not None else 0
            ctx.seq_rm(home, n_ctx + len(rows))  # the home sequence cut after the accepted node = the path
            if many and home != 0:
                ctx.seq_keep(home)
                ctx.seq_cp(home, 0)
            if many:
                ctx.seq_keep(0)
        self.length = n_ctx + len(rows)
        self._pending = None


class LlamaTarget:
    """``TargetModel``'s interface on a ``LlamaContext``; ``model`` is the transformers copy drafters read."""

    # one sequence at a time; final-norm states only; a prompt's hidden states cost about a fifth more prefill
    # (every row's logits come with them)
    caps = LLAMACPP.caps

    def __init__(self, ctx: LlamaContext, model: Any) -> None:
        self.ctx, self.model = ctx, model
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.num_layers = ctx.n_layer
        self._layouts: OrderedDict[bytes, SeqLayout] = OrderedDict()

    def scratch_cache(self, capacity: int) -> LlamaCache:
        """An empty cache for a one-off forward outside a generation (it empties the shared context)."""
        return LlamaCache(self.ctx, capacity)

    def check_layers(self, layers: tuple[int, ...]) -> None:
        """One-line ``ConfigError`` for any intermediate layer: llama.cpp gives the final-norm states alone."""
        if layers:
            raise ConfigError(f"the llamacpp backend gives final-norm hidden states only, not the intermediate layers "
                             f"{list(layers)} this drafter reads (feature_layers); use --backend fast")

    def forward(self, input_ids: torch.Tensor, cache: LlamaCache, n_ctx: int, position_offsets: torch.Tensor | None = None,
                ancestor_mask: torch.Tensor | None = None, last_logits_only: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.run(input_ids, cache, n_ctx, position_offsets, ancestor_mask, last_logits_only=last_logits_only)
        return out.hidden, out.logits

    def run(self, input_ids: torch.Tensor, cache: LlamaCache, n_ctx: int, position_offsets: torch.Tensor | None = None,
            ancestor_mask: torch.Tensor | None = None, *, last_logits_only: bool = False,
            layers: tuple[int, ...] = (), hidden: bool = True) -> Forward:
        """``TargetModel.run`` on llama.cpp: (hidden [n, h], logits [n, V] or [1, V]); ``hidden=False``: a
        zero-width hidden [n, 0] (no drafter reads it) and the prompt's head on its last row alone."""
        self.check_layers(layers)
        cache.settle(n_ctx)
        tokens = input_ids[0].tolist()
        n = len(tokens)
        offsets = np.arange(n) if position_offsets is None else position_offsets.cpu().numpy()
        layout = None
        if ancestor_mask is not None:
            layout = self._layout(ancestor_mask.cpu().numpy(), offsets)
        order = np.arange(n) if layout is None else layout.order
        seq_ids = None if layout is None else [layout.seq_ids[r] for r in order]
        outputs = None
        if last_logits_only:
            outputs = np.zeros(n, dtype=np.int8)
            outputs[np.flatnonzero(order == n - 1)] = 1
        cache.begin(n_ctx, n, layout)
        logits, states = self.ctx.decode([tokens[r] for r in order], n_ctx + offsets[order], seq_ids, outputs, hidden)
        if layout is not None and not last_logits_only:
            logits = logits[np.argsort(order)]  # batch order -> row order
        if states is None:
            states = np.zeros((n, 0), dtype=np.float32)
        elif layout is not None:
            states = states[np.argsort(order)]
        return Forward(torch.from_numpy(states), torch.from_numpy(logits))

    def _layout(self, mask: np.ndarray, offsets: np.ndarray) -> SeqLayout:
        key = offsets.astype(np.int32).tobytes() + np.packbits(mask).tobytes()
        found = self._layouts.get(key)
        if found is None:
            found = self._layouts[key] = layout_sequences(mask, offsets, self.ctx.max_seqs)
            if len(self._layouts) > _LAYOUTS:
                self._layouts.popitem(last=False)
        else:
            self._layouts.move_to_end(key)
        return found
