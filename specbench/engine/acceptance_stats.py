"""What ``budget=auto`` learns of a drafter's acceptance (``AcceptanceStats``): decayed counts of trials and
acceptances per (depth, sibling rank) bucket, drawn from by Thompson sampling (``budget.py``'s docstring), and
how a tree's nodes fall into those buckets (``sibling_ranks``), or which node is the drafter's best guess.

Example: a tree whose root has children a and b, and a a child c: depths 1, 1, 2 and ranks 0, 1, 0; once a is
accepted and b rejected, bucket (1, 0) has one trial and one acceptance, (1, 1) one trial and none, and (2, 0)
one trial (c's parent was accepted).
"""
from __future__ import annotations

import numpy as np

from specbench.engine.tree import DraftTree

MAX_DEPTH_BUCKETS = 16  # depths beyond share the last bucket
MAX_RANK_BUCKETS = 8  # sibling ranks beyond share the last bucket
DECAY = 0.995  # per step: about 200 steps of memory
PRIOR = (1.0, 1.0)  # Beta(accepted, rejected) pseudo-counts


def sibling_ranks(tree: DraftTree) -> list[int]:
    """Each node's position among its parent's children, in tree order.

    >>> sibling_ranks(DraftTree((5, 6, 7, 8), (-1, 0, -1, 0)))
    [0, 0, 1, 1]
    """
    seen: dict[int, int] = {}
    ranks = []
    for p in tree.parents:
        r = seen.get(p, 0)
        ranks.append(r)
        seen[p] = r + 1
    return ranks


def best_guess(tree: DraftTree) -> int:
    """The drafter's own most likely node: its first child of the root (every drafter lists children best-first),
    not the budget's sampled ranking, which after rejections is a random draw among buckets that all look bad.

    >>> best_guess(DraftTree((5, 6, 7), (-1, 0, -1)))
    0
    """
    return tree.parents.index(-1)


class AcceptanceStats:
    """Decayed counts of trials and acceptances per (depth, sibling rank) bucket."""

    def __init__(self) -> None:
        shape = (MAX_DEPTH_BUCKETS, MAX_RANK_BUCKETS)
        self.trials = np.zeros(shape)
        self.accepted = np.zeros(shape)

    def rates(self) -> np.ndarray:
        """Posterior mean acceptance rate per bucket, ``[depth - 1, rank]``; always in (0, 1)."""
        a, b = PRIOR
        return (self.accepted + a) / (self.trials + a + b)

    def sample_rates(self, rng: np.random.Generator) -> np.ndarray:
        """One draw per bucket from its Beta posterior, ``[depth - 1, rank]``, clipped into (0, 1)."""
        a, b = PRIOR
        return np.clip(rng.beta(self.accepted + a, self.trials - self.accepted + b), 1e-9, 1 - 1e-9)

    @staticmethod
    def buckets(tree: DraftTree) -> tuple[np.ndarray, np.ndarray]:
        depth = np.minimum(np.array(tree.depths()), MAX_DEPTH_BUCKETS) - 1
        rank = np.minimum(np.array(sibling_ranks(tree)), MAX_RANK_BUCKETS - 1)
        return depth, rank

    def update(self, tree: DraftTree | None, accepted_nodes: list[int]) -> None:
        """One step: older counts decay; a verified ``tree`` whose accepted path is ``accepted_nodes``
        (root excluded) adds its trials."""
        self.trials *= DECAY
        self.accepted *= DECAY
        if tree is None:
            return
        depth, rank = self.buckets(tree)
        on_path = set(accepted_nodes)
        reached = {-1} | on_path
        for i, p in enumerate(tree.parents):
            if p in reached:  # the node's parent was accepted: a trial of its bucket
                self.trials[depth[i], rank[i]] += 1
                self.accepted[depth[i], rank[i]] += i in on_path
