"""Draft trees built level by level from a draft network that scores the children of any node (EAGLE's static
and dynamic trees, which EAGLE-3 and others reuse), and the published tree templates of rank paths.

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

from typing import Callable, Sequence

import torch

from specbench.engine.tree import DraftTree

Expand = Callable[[list[int], list[int], list[int]], torch.Tensor]
"""``expand(node_ids, tokens, parents)``: the nodes to run (ids in creation order), their tokens and
parent ids (-1 = the root); returns log-probs ``[len(node_ids), V]`` of each node's children."""

# Medusa's default tree (``mc_sim_7b_63`` in FasterDecoding/Medusa ``medusa_choices.py``): 63 nodes, top-10 ranks,
# depth <= 4, chosen there by simulated acceptance on Vicuna-7B, node by node: every prefix of the list is itself
# a tree (each choice's parent comes before it), which Medusa's ``tree_size`` relies on (Hydra uses it too)
MC_SIM_7B_63: tuple[tuple[int, ...], ...] = (
    (0,), (0, 0), (1,), (0, 1), (2,), (0, 0, 0), (1, 0), (0, 2), (3,), (0, 3), (4,), (0, 4), (2, 0), (0, 5),
    (0, 0, 1), (5,), (0, 6), (6,), (0, 7), (0, 1, 0), (1, 1), (7,), (0, 8), (0, 0, 2), (3, 0), (0, 9), (8,),
    (9,), (1, 0, 0), (0, 2, 0), (1, 2), (0, 0, 3), (4, 0), (2, 1), (0, 0, 4), (0, 0, 5), (0, 0, 0, 0), (0, 1, 1),
    (0, 0, 6), (0, 3, 0), (5, 0), (1, 3), (0, 0, 7), (0, 0, 8), (0, 0, 9), (6, 0), (0, 4, 0), (1, 4), (7, 0),
    (0, 1, 2), (2, 0, 0), (3, 1), (2, 2), (8, 0), (0, 5, 0), (1, 5), (1, 0, 1), (0, 2, 1), (9, 0), (0, 6, 0),
    (0, 0, 0, 1), (1, 6), (0, 7, 0),
)


def static_tree(first: torch.Tensor, expand: Expand, choices: Sequence[tuple[int, ...]], max_depth: int) -> DraftTree:
    """The rank-path tree ``choices`` (parents listed before children), levels deeper than ``max_depth`` cut."""
    paths = sorted((c for c in choices if len(c) <= max_depth), key=lambda c: (len(c), c))
    index: dict[tuple[int, ...], int] = {}
    tokens: list[int] = []
    parents: list[int] = []
    ranks = 1 + max((c[-1] for c in paths), default=0)
    top_of: dict[int, list[int]] = {-1: first.topk(min(ranks, first.shape[-1])).indices.tolist()}
    level = 1
    while True:
        for path in (p for p in paths if len(p) == level):
            parent = index.get(path[:-1], -1) if level > 1 else -1
            if (level > 1 and path[:-1] not in index) or path[-1] >= len(top_of[parent]):
                continue
            index[path] = len(tokens)
            tokens.append(int(top_of[parent][path[-1]]))
            parents.append(parent)
        deeper = {index[p[:-1]] for p in paths if len(p) == level + 1 and p[:-1] in index}
        if not deeper:
            return DraftTree(tuple(tokens), tuple(parents))
        run = sorted(deeper)
        logp = expand(run, [tokens[n] for n in run], [parents[n] for n in run])
        top = logp.topk(min(ranks, logp.shape[-1]), dim=-1).indices.tolist()
        top_of.update(zip(run, top))
        level += 1


def dynamic_tree(first: torch.Tensor, expand: Expand, top_k: int, depth: int, total: int, max_depth: int) -> DraftTree:
    """EAGLE-2's tree: ``depth`` expansions of the best ``top_k`` nodes, then the best ``total`` nodes."""
    k = min(top_k, first.shape[-1])
    val, idx = first.topk(k)
    tokens, parents, scores = idx.tolist(), [-1] * k, val.tolist()
    frontier = list(range(k))
    for _ in range(min(depth, max_depth - 1)):
        logp = expand(frontier, [tokens[n] for n in frontier], [parents[n] for n in frontier])
        val, idx = logp.topk(k, dim=-1)  # [F, k]
        cum = val + torch.tensor([scores[n] for n in frontier], dtype=val.dtype, device=val.device)[:, None]
        base = len(tokens)
        for row, node in enumerate(frontier):
            tokens.extend(idx[row].tolist())
            parents.extend([node] * k)
            scores.extend(cum[row].tolist())
        best = cum.flatten().topk(min(k, cum.numel())).indices.tolist()  # the next frontier, by global score
        frontier = sorted(base + b for b in best)
    return select_best(tokens, parents, scores, total)


def select_best(tokens: list[int], parents: list[int], scores: list[float], total: int) -> DraftTree:
    """The ``total`` best-scoring nodes whose ancestors are all kept, laid out parents first.

    >>> select_best([7, 8, 9], [-1, 0, -1], [-0.1, -0.1, -2.0], 2)
    DraftTree(tokens=(7, 8), parents=(-1, 0))
    """
    order = sorted(range(len(tokens)), key=lambda n: (-scores[n], n))
    kept: set[int] = set()
    for n in order:
        if len(kept) == total:
            break
        if parents[n] == -1 or parents[n] in kept:
            kept.add(n)
    new_id = {n: i for i, n in enumerate(sorted(kept))}  # creation order puts parents first
    ordered = sorted(kept)
    return DraftTree(tuple(tokens[n] for n in ordered), tuple(-1 if parents[n] == -1 else new_id[parents[n]] for n in ordered))
