"""Medusa's sparse candidate tree: paths of top-k ranks, one rank per head, laid out as a ``DraftTree``.

A choice ``(i0, i1, ..., id)`` is the node at depth d + 1 whose token is head 0's rank-i0 token, then head
1's rank-i1 token, and so on. Example: choices ``[(0,), (1,), (0, 0)]`` with head tops ``[[5, 6], [7, 8]]``
give tokens ``(5, 6, 7)`` with parents ``(-1, -1, 0)``.
"""
from __future__ import annotations

from typing import Sequence

from specbench.api import MC_SIM_7B_63, DraftTree

__all__ = ["MC_SIM_7B_63", "TREES", "max_rank", "tree_from_choices"]

# the reference's default tree, ``mc_sim_7b_63`` (63 nodes, top-10 ranks, depth <= 4): a template in the core's kit
TREES = {"mc_sim_7b_63": MC_SIM_7B_63}


def tree_from_choices(top: Sequence[Sequence[int]], choices: Sequence[tuple[int, ...]]) -> DraftTree:
    """``top[k]``: head k's tokens by rank. Parents are laid out before children (shorter paths first)."""
    ordered = sorted(choices, key=lambda c: (len(c), c))
    index: dict[tuple[int, ...], int] = {}
    tokens: list[int] = []
    parents: list[int] = []
    for path in ordered:
        depth = len(path)
        if depth > len(top) or path[-1] >= len(top[depth - 1]):
            continue  # beyond the heads or ranks available
        parent = index.get(path[:-1], -1) if depth > 1 else -1
        if depth > 1 and path[:-1] not in index:
            continue
        index[path] = len(tokens)
        tokens.append(int(top[depth - 1][path[-1]]))
        parents.append(parent)
    return DraftTree(tuple(tokens), tuple(parents))


def max_rank(choices: Sequence[tuple[int, ...]]) -> int:
    """Ranks a tree needs per head (the reference's TOPK = 10 for ``mc_sim_7b_63``)."""
    return 1 + max(max(c) for c in choices)
