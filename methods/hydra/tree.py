"""Hydra's draft tree: the reference's rank paths, drafted depth by depth with one head call per depth.

A choice ``(r_0, ..., r_d)`` is the node reached by taking head 0's rank-``r_0`` token, then head 1's
rank-``r_1`` token GIVEN that first token, and so on: unlike Medusa's tree, each depth's candidates depend on
the path above them. So depth d needs one head-(d-1) evaluation per parent path that has children (the
reference's ``children_to_expand``), batched into one call: ``Level.parents`` lists those paths and
``Level.picks`` says, per node of the depth, which row and which rank its token comes from.

Worked example: choices ``[(0,), (1,), (0, 0), (1, 0), (0, 1)]`` -> level 1: parents ``[()]``, picks
``[(0, 0), (0, 1)]`` (row 0, ranks 0 and 1), top-2; level 2: parents ``[(0,), (1,)]``, picks
``[(0, 0), (0, 1), (1, 0)]`` for nodes ``(0, 0), (0, 1), (1, 0)``, top-2. With a head that answers "the
path's last token + 1" (rank 0) and "+ 2" (rank 1) and root 10: depth 1 gives 11, 12; depth 2 gives
12, 13 under 11 and 13 under 12.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from specbench.api import MC_SIM_7B_63
from specbench.api import DraftTree

# the reference's default (``hydra_choices.py``: ``mc_sim_7b_63``, Spec-Bench's ``--hydra-choices``), the same
# 63 rank paths as Medusa's tree of that name; listed node by node, so every prefix of the list is a tree
TREES: dict[str, tuple[tuple[int, ...], ...]] = {"mc_sim_7b_63": MC_SIM_7B_63}

Path = tuple[int, ...]


@dataclass(frozen=True)
class Level:
    """One depth of the tree: the parent paths the head reads (rows) and, per node, (row, rank)."""

    parents: tuple[Path, ...]
    nodes: tuple[Path, ...]
    picks: tuple[tuple[int, int], ...]
    topk: int


def plan(choices: Sequence[Path], max_depth: int | None = None) -> list[Level]:
    """The levels of ``choices`` (sorted as the reference: by depth, then by ranks), down to ``max_depth``.

    >>> [(lv.parents, lv.picks, lv.topk) for lv in plan([(0,), (1,), (0, 0), (1, 0), (0, 1)])]
    [(((),), ((0, 0), (0, 1)), 2), (((0,), (1,)), ((0, 0), (0, 1), (1, 0)), 2)]
    """
    known = set(choices)
    ordered = sorted((c for c in known if all(c[:i] in known for i in range(1, len(c)))), key=lambda c: (len(c), c))
    levels: list[Level] = []
    depth = 1
    while True:
        nodes = tuple(c for c in ordered if len(c) == depth)
        if not nodes or (max_depth is not None and depth > max_depth):
            return levels
        parents = tuple(sorted({c[:-1] for c in nodes}))
        row = {p: i for i, p in enumerate(parents)}
        levels.append(Level(parents, nodes, tuple((row[c[:-1]], c[-1]) for c in nodes), 1 + max(c[-1] for c in nodes)))
        depth += 1


def walk(levels: Sequence[Level], root_input: torch.Tensor, score: Callable[[int, torch.Tensor], torch.Tensor],
         embed: Callable[[list[int]], torch.Tensor]) -> DraftTree:
    """Draft ``levels`` from the root: ``score(k, x [P, (k + 2) h]) -> logits [P, V']`` is head k, ``embed(ids)
    -> [n, h]`` embeds ids of those logits; ``root_input`` = ``[c, e_root]`` ``[2h]``. Returns the tree in the
    reference's node order (depth, then ranks) with the logits' ids (the caller maps them to the target's).
    """
    inputs: dict[Path, torch.Tensor] = {(): root_input}  # path -> [c, e_root, e_1, ..., e_d]
    tokens: dict[Path, int] = {}
    index: dict[Path, int] = {}
    out_tokens: list[int] = []
    out_parents: list[int] = []
    for k, level in enumerate(levels):
        x = torch.stack([inputs[p] for p in level.parents])  # [P, (k + 2) h]
        logits = score(k, x)
        top = logits.topk(min(level.topk, logits.shape[-1]), dim=-1).indices.tolist()  # [P, topk]
        for node, (row, rank) in zip(level.nodes, level.picks):
            tokens[node] = int(top[row][rank])
            index[node] = len(out_tokens)
            out_tokens.append(tokens[node])
            out_parents.append(index[node[:-1]] if k else -1)
        if k + 1 < len(levels):  # the next level's parents: this level's nodes that have children
            grow = list(levels[k + 1].parents)
            emb = embed([tokens[p] for p in grow])  # [G, h]
            for p, e in zip(grow, emb):
                inputs[p] = torch.cat([inputs[p[:-1]], e])
    return DraftTree(tuple(out_tokens), tuple(out_parents))
