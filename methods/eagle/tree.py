"""EAGLE's draft trees: EAGLE-1's default tree of rank paths here; the builders (EAGLE-1's static tree, EAGLE-2's
dynamic one, ``select_best``) are the core's kit (``specbench/drafting/trees.py``, reached through ``specbench.api``),
re-exported for EAGLE's files and tests.

Example: ``static_tree(first, expand, EAGLE1_TREE, max_depth)`` drafts EAGLE-1's 25-node tree; ``(0, 1)`` in it is
the second-best child of the best first token.
"""
from __future__ import annotations

from specbench.api import Expand, dynamic_tree, select_best, static_tree

__all__ = ["EAGLE1_TREE", "Expand", "dynamic_tree", "select_best", "static_tree"]  # (the builders: the core's kit)

# EAGLE-1's default tree (``mc_sim_7b_63`` in SafeAILab/EAGLE ``choices.py``, despite the name: 25 nodes,
# top-4 ranks, depth 5)
EAGLE1_TREE: tuple[tuple[int, ...], ...] = (
    (0,), (1,), (2,), (3,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (0, 0, 0), (0, 0, 1),
    (0, 0, 2), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (1, 0, 0), (0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 0, 2),
    (0, 0, 0, 0, 0), (0, 0, 0, 0, 1),
)
