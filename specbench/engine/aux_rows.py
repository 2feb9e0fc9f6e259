"""Auxiliary rows: extra query rows a drafter adds to a verification pass for their logits alone.

Lookahead decoding runs its Jacobi window in the same forward as the verification of its guesses;
the window's rows are never output, their greedy predictions go back to the drafter. Any drafter can
do the same: a proposal may carry ``AuxRows`` next to its ``DraftTree``.

The engine lays the rows out after ``[root] + tree``. Every auxiliary row sees the whole context and the
root, and among the auxiliary rows only what ``attends`` allows; draft-tree rows never see auxiliary
rows and auxiliary rows never see draft-tree rows, so the tree's logits (and hence the output) are the
same with or without them. Their keys and values are dropped by the engine's cache trim.

Example: a 2-row Jacobi chain after the root, ``AuxRows.chain([7, 9])``: tokens ``(7, 9)`` at
offsets ``(1, 2)`` from the root; row 1 attends to row 0. With root 5 and context ``c``, the model's
greedy prediction at row 1 equals plain decoding's next token after ``c + [5, 7, 9]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from specbench.engine.tree import CompiledTree


@dataclass(frozen=True)
class AuxRows:
    """Tokens, position offsets from the root (>= 1) and the mask among themselves.

    ``attends[i, j]``: auxiliary row ``i`` attends to auxiliary row ``j`` (the diagonal must be set).
    """

    tokens: tuple[int, ...]
    offsets: tuple[int, ...]
    attends: np.ndarray = field(compare=False)  # [m, m] bool

    def __post_init__(self) -> None:
        m = len(self.tokens)
        if len(self.offsets) != m:
            raise ValueError("tokens and offsets must have the same length")
        if self.attends.shape != (m, m) or self.attends.dtype != np.bool_:
            raise ValueError(f"attends must be a bool array of shape ({m}, {m})")
        if m and not self.attends.diagonal().all():
            raise ValueError("every auxiliary row must attend to itself")
        if any(o < 1 for o in self.offsets):
            raise ValueError("auxiliary rows sit after the root: offsets must be >= 1")

    def __len__(self) -> int:
        return len(self.tokens)

    @staticmethod
    def chain(tokens: Sequence[int]) -> "AuxRows":
        """Consecutive rows after the root, each seeing the ones before it (plain causal order)."""
        m = len(tokens)
        return AuxRows(tuple(int(t) for t in tokens), tuple(range(1, m + 1)), np.tril(np.ones((m, m), dtype=bool)))


def append_aux(compiled: CompiledTree, aux: AuxRows | None) -> CompiledTree:
    """``compiled`` with ``aux``'s rows laid out after its own (``aux_start`` marks the first)."""
    if aux is None or not len(aux):
        return compiled
    device = compiled.input_ids.device
    n, m = compiled.input_ids.shape[1], len(aux)
    offsets = compiled.position_offsets
    depth = torch.arange(n, device=device) if offsets is None else offsets
    anc = compiled.ancestor_mask
    tree_mask = torch.tril(torch.ones(n, n, dtype=torch.bool, device=device)) if anc is None else anc
    mask = torch.zeros(n + m, n + m, dtype=torch.bool, device=device)  # [n + m, n + m]
    mask[:n, :n] = tree_mask
    mask[n:, 0] = True  # every auxiliary row sees the root
    mask[n:, n:] = torch.from_numpy(aux.attends).to(device)
    return CompiledTree(
        input_ids=torch.cat([compiled.input_ids, torch.tensor([aux.tokens], dtype=torch.long, device=device)], dim=1),
        position_offsets=torch.cat([depth, torch.tensor(aux.offsets, dtype=depth.dtype, device=device)]),
        ancestor_mask=mask,
        parents=compiled.parents,
        children=compiled.children,
        aux_start=n,
    )
