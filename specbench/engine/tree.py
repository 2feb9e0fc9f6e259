"""The compiled form of a draft tree (``specbench/tree/draft_tree.py``'s ``DraftTree``) that one verification
pass runs: ids, depth-based positions and the ancestor mask.

Example: ``[root] + chains [5, 6, 7], [5, 8]`` compiles to rows ``[t0, 5, 6, 7, 8]`` with parents
``[-1, 0, 1, 2, 1]``; a chain needs no mask (plain causal attention).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

# (DraftTree lives below the budget's room, which values drafts without the engine; imported from here too)
from specbench.tree.draft_tree import DraftTree


@dataclass
class CompiledTree:
    """The tensors one verification pass needs for ``[t0] + tree`` (n = len(tree) + 1 query rows).

    ``parents`` and ``children`` index the query rows: row 0 is t0, row i + 1 is tree node i.
    ``aux_start``: the first auxiliary row (``aux_rows.py``) when a proposal carries some, else None.
    """

    input_ids: torch.Tensor  # [1, n]
    position_offsets: torch.Tensor | None  # [n] depth of each row (t0 = 0); None for a chain (= 0..n-1)
    ancestor_mask: torch.Tensor | None  # [n, n] bool, row attends to column; None for a chain
    parents: list[int]  # [n] parent row per row (-1 for t0)
    children: list[dict[int, int]]  # per row: token -> child row
    aux_start: int | None = None

    @property
    def tree_rows(self) -> int:
        """Rows of ``[t0] + tree`` (auxiliary rows excluded)."""
        return len(self.parents)


def compile_tree(root: int, tree: DraftTree | None, device: torch.device) -> CompiledTree:
    """Lay out ``[root] + tree`` for one forward pass: ids, depths and the ancestor mask."""
    tokens = [root] + (list(tree.tokens) if tree is not None else [])
    n = len(tokens)
    parents = [-1] + ([p + 1 for p in tree.parents] if tree is not None else [])
    children: list[dict[int, int]] = [{} for _ in range(n)]
    for row in range(1, n):
        children[parents[row]].setdefault(tokens[row], row)
    input_ids = torch.tensor([tokens], dtype=torch.long, device=device)
    if tree is None or tree.is_chain:
        # a chain is plain causal attention at consecutive positions: the model's defaults already do that
        return CompiledTree(input_ids, None, None, parents, children)
    depth = [0] * n
    anc = np.eye(n, dtype=bool)
    for row in range(1, n):
        p = parents[row]
        depth[row] = depth[p] + 1
        anc[row] |= anc[p]
    mask = torch.from_numpy(anc).to(device)
    return CompiledTree(input_ids, torch.tensor(depth, device=device), mask, parents, children)
