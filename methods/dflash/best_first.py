"""DDTree's draft tree (Ringel and Romano 2026, arXiv 2604.12989): the ``nodes`` likeliest prefixes of the block.

DFlash's block gives one distribution per depth (row ``d`` of the block scores the token ``d`` places after the
root), each independent of the tokens before it. DDTree reads them as a factorised model of the continuation:
a path of tokens ``t_1 .. t_d`` scores ``log q_1(t_1) + ... + log q_d(t_d)``, and the tree is the ``nodes``
paths of highest score. A prefix of a path scores at least as much as the path (every term is <= 0), so that set
is prefix-closed: a tree.

It is found best-first, without scoring every path: a heap of candidates, each a node's next sibling (the next
token of its depth's ranking, under the same parent) or its first child (its next depth's best token). Popping
the best candidate adds it to the tree and pushes its own next sibling and first child. A node's children are
therefore added in the order of their depth's ranking: best first (the drafter contract's point 2, which
``budget=auto`` relies on), and distinct (they are distinct tokens of one ranking). Tree order is pop order:
scores never increase along it, and each parent precedes its children. Ties pop in the order they were pushed.

Example: depth 1 ranks token 5 (p 0.5) over 1 (0.4); depth 2 ranks 2 (0.6) over 6 (0.3). The paths by score:
``5`` 0.5, ``1`` 0.4, ``5 2`` 0.3, ``1 2`` 0.24, ``5 6`` 0.15: four nodes are the first four.

>>> import math
>>> q = torch.full((2, 8), -math.inf)
>>> q[0, 5], q[0, 1], q[1, 2], q[1, 6] = math.log(0.5), math.log(0.4), math.log(0.6), math.log(0.3)
>>> best_first_tree(q, 4)
DraftTree(tokens=(5, 1, 2, 2), parents=(-1, -1, 0, 1))
"""
from __future__ import annotations

import heapq

import torch

from specbench.api import DraftTree


def best_first_tree(logprobs: torch.Tensor, nodes: int) -> DraftTree:
    """The ``nodes`` highest-scoring prefixes under ``logprobs`` (``[depth, V]``, row ``d - 1`` the log-distribution
    of the token at depth ``d``), in pop order, each node's children best first. Only the ``nodes`` best tokens of
    a depth can appear (a node's ``k``-th child scores below its ``k - 1`` better siblings)."""
    depth_limit = logprobs.shape[0]
    if nodes < 1 or depth_limit == 0:
        return DraftTree((), ())
    k = min(nodes, logprobs.shape[-1])
    top, ids = torch.topk(logprobs.float(), k, dim=-1)
    top_lp, top_ids = top.tolist(), ids.tolist()
    # a candidate: (-score, push order, parent node, depth, rank within its depth, the parent's score)
    heap = [(-top_lp[0][0], 0, -1, 1, 0, 0.0)]
    pushed = 1
    tokens: list[int] = []
    parents: list[int] = []
    while heap and len(tokens) < nodes:
        neg, _, parent, depth, rank, base = heapq.heappop(heap)
        node, score = len(tokens), -neg
        tokens.append(top_ids[depth - 1][rank])
        parents.append(parent)
        if rank + 1 < k:  # the next sibling: the same parent, its depth's next token
            heapq.heappush(heap, (-(base + top_lp[depth - 1][rank + 1]), pushed, parent, depth, rank + 1, base))
            pushed += 1
        if depth < depth_limit:  # the first child: the next depth's best token
            heapq.heappush(heap, (-(score + top_lp[depth][0]), pushed, node, depth + 1, 0, score))
            pushed += 1
    return DraftTree(tuple(tokens), tuple(parents))
