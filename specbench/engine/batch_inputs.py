"""The tensors of one batched forward: each slot's ``[root] + tree (+ auxiliary rows)``, padded to the longest.

Slot ``b`` has ``lengths[b]`` cached columns and ``n_b`` new rows (its compiled tree, ``tree.py``); every
slot is padded to ``n = max n_b`` rows. Row ``i < n_b`` of slot ``b`` sits at position ``lengths[b] +
depth(i)`` and may attend to the slot's context (columns ``< lengths[b]``) and to its ancestors among the
new rows (columns ``lengths[b] + j``); a padding row attends only to its own column, so no row of the
softmax is empty. Columns of other slots never exist in a slot's row of the buffer.

Example: slot lengths ``[2, 3]``; slot 0 verifies the chain ``[7, 8]`` (2 rows), slot 1 only its root
(1 row, padded to 2). Positions ``[[2, 3], [3, 4]]``; slot 0's second row sees columns 0-3, slot 1's
real row columns 0-3, its padding row only column 4.
"""
from __future__ import annotations

import torch

from specbench.engine.tree import CompiledTree


def batch_inputs(compiled: list[CompiledTree], lengths: list[int], span: int, device: torch.device,
                 dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input ids ``[A, n]``, positions ``[A, n]``, additive mask ``[A, 1, n, span]``) for the slots' trees."""
    rows = max(c.input_ids.shape[1] for c in compiled)
    a = len(compiled)
    blocked = torch.finfo(dtype).min
    ids = torch.zeros(a, rows, dtype=torch.long, device=device)
    positions = torch.zeros(a, rows, dtype=torch.long, device=device)
    mask = torch.full((a, 1, rows, span), blocked, dtype=dtype, device=device)
    steps = torch.arange(rows, device=device)
    for b, (c, base) in enumerate(zip(compiled, lengths)):
        n = c.input_ids.shape[1]
        ids[b, :n] = c.input_ids[0]
        offsets = steps[:n] if c.position_offsets is None else c.position_offsets
        positions[b, :n] = base + offsets
        positions[b, n:] = base + steps[n:]
        mask[b, 0, :n, :base] = 0
        anc = torch.ones(n, n, dtype=torch.bool, device=device).tril() if c.ancestor_mask is None else c.ancestor_mask
        mask[b, 0, :n, base : base + n].masked_fill_(anc, 0)
        pad = steps[n:]
        mask[b, 0, pad, base + pad] = 0  # a padding row sees itself only
    return ids, positions, mask
