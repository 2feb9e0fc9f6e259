"""EAGLE's draft trees: EAGLE-1's default tree here, the builders in the core's drafting kit (``api``), which
build them level by level from a draft that scores the children of any node.

``expand(nodes) -> log-probs [len(nodes), V]`` runs the draft on tree nodes (each one's ancestors were
expanded before) and returns the log-distribution of each one's next token. ``first`` is that
distribution for the root's children.

- **static** (EAGLE-1): a fixed tree of rank paths; ``(0, 1)`` is the second-best child of the best
  first token. Each level expands only the nodes that have children in the tree.
- **dynamic** (EAGLE-2): expand the ``top_k`` nodes of highest global score (sum of log-probs from the
  root) at each of ``depth`` levels, ``top_k`` children each; then keep the ``total`` best of every node
  generated. A child never scores above its parent, so the kept set is a tree (ties go to the parent).

Example (dynamic, top_k 2, depth 1, total 3): first ``{a: -0.1, b: -1.0}``; expanding ``a`` gives
``{c: -0.2, d: -3.0}`` and ``b`` gives ``{e: -0.5, f: -0.7}``; scores a -0.1, c -0.3, b -1.0, e -1.5,
f -1.7, d -3.1; kept: a, c, b (``tokens (a, b, c), parents (-1, -1, 0)``).
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
