"""The tensors of one batched forward: each slot's ``[root] + tree (+ auxiliary rows)``, padded to the longest.

Slot ``b`` has ``lengths[b]`` cached columns and ``n_b`` new rows (its compiled tree, ``tree.py``); every
slot is padded to ``n = max n_b`` rows. Row ``i < n_b`` of slot ``b`` sits at position ``lengths[b] +
depth(i)`` and may attend to the slot's context (columns ``< lengths[b]``) and to its ancestors among the
new rows (columns ``lengths[b] + j``); a padding row attends only to its own column, so no row of the
softmax is empty. Columns of other slots never exist in a slot's row of the buffer.

Example: slot lengths ``[2, 3]``; slot 0 verifies the chain ``[7, 8]`` (2 rows), slot 1 only its root
(1 row, padded to 2). Positions ``[[2, 3], [3, 4]]``; slot 0's second row sees columns 0-3, slot 1's
real row columns 0-3, its padding row only column 4.

On a model with sliding-window or chunked layers each layer kind gets its own mask, cut from that one by the
rows' and keys' positions (``attention_layout.py``): slot ``b``'s column ``c < lengths[b]`` holds position ``c``,
its column ``lengths[b] + i`` its row ``i``'s position.
"""
from __future__ import annotations

import torch

from specbench.engine.attention_layout import AttentionLayout, Masks, additive
from specbench.engine.tree import CompiledTree


def batch_inputs(compiled: list[CompiledTree], lengths: list[int], span: int, device: torch.device,
                 dtype: torch.dtype, layout: AttentionLayout | None = None) -> tuple[torch.Tensor, torch.Tensor, Masks]:
    """(input ids ``[A, n]``, positions ``[A, n]``, additive mask ``[A, 1, n, span]``) for the slots' trees;
    the mask is one per layer kind of ``layout`` when it has sliding or chunked layers (None: every layer full)."""
    rows = max(c.input_ids.shape[1] for c in compiled)
    a = len(compiled)
    ids = torch.zeros(a, rows, dtype=torch.long, device=device)
    positions = torch.zeros(a, rows, dtype=torch.long, device=device)
    allowed = torch.zeros(a, rows, span, dtype=torch.bool, device=device)
    keys = torch.arange(span, device=device).repeat(a, 1)  # [A, span] each column's position
    steps = torch.arange(rows, device=device)
    for b, (c, base) in enumerate(zip(compiled, lengths)):
        n = c.input_ids.shape[1]
        ids[b, :n] = c.input_ids[0]
        offsets = steps[:n] if c.position_offsets is None else c.position_offsets
        positions[b, :n] = base + offsets
        positions[b, n:] = base + steps[n:]
        keys[b, base : base + rows] = positions[b]
        allowed[b, :n, :base] = True
        anc = torch.ones(n, n, dtype=torch.bool, device=device).tril() if c.ancestor_mask is None else c.ancestor_mask
        allowed[b, :n, base : base + n] = anc
        pad = steps[n:]
        allowed[b, pad, base + pad] = True  # a padding row sees itself only
    if layout is None or not layout.windowed:
        return ids, positions, additive(allowed, dtype)
    return ids, positions, layout.masks(allowed, positions, keys, dtype)
