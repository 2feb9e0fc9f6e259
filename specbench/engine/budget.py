"""Draft budget (``budget=auto``): how much of a ranked draft is worth verifying on this machine.

Between propose and verify the engine keeps the prefix-closed subset of the draft tree that maximises
expected tokens per second for this step:

    value(S) = (1 + sum over v in S of P(v)) / (T(1 + |S| + aux rows) + draft seconds)

- ``T(n)`` is the machine's cost profile (``specbench/profiling/cost_profile.py``): seconds of one target forward
  of ``n`` new tokens after the step's context (wide forwards cost more after a long context).
- ``P(v)`` is the probability that node ``v`` is accepted: the product, along its path, of the
  learned acceptance rate ``p(depth, rank)`` = P(node accepted | its parent accepted), where ``rank``
  is the node's position among its siblings. Every drafter lists a node's children best-first (REST
  and CREST by count, DReSD by neighbour order, ReDrafter by beam score, EAGLE and Medusa by
  probability, chains trivially), so the sibling rank is how a drafter ranks its nodes.
- ``p`` is learned online from every verification: each node whose parent was accepted is one trial
  of its ``(depth, rank)`` bucket, counted on a Beta(1, 1) prior. Counts decay a little every step, so
  recent text weighs more. Each step draws ``p`` from the buckets' Beta posteriors (Thompson sampling,
  seeded) instead of taking their means: a bucket that looked bad early (PLD on a first creative-writing
  answer) is still tried now and then and recovers when the text turns repetitive; with many trials
  the draws are close to the means.

Since ``p < 1``, a child's ``P`` is below its parent's, so for each size k the k nodes of highest
``P`` form a prefix-closed subset and are the best subset of that size; the step keeps the best k.
The cost curve need not be monotone (on this project's CPU a 2-row forward costs more than a 4-row one):
every k is priced with its own T.

Example: a chain of 3 drafts with ``p = 0.5`` at every depth (well learned, so the draws are 0.5), ``T(n) = 40 + 2 (n - 1)`` ms and no draft
time: P = 0.5, 0.25, 0.125; values (1 + cum P) / T = 1/40, 1.5/42, 1.75/44, 1.875/46 tokens per ms
-> 0.0250, 0.0357, 0.0398, 0.0408: all 3 are kept. With ``T(n) = 40 (1 + (n - 1) / 4)`` the values are
1/40, 1.5/50, 1.75/60, 1.875/70 -> only the first draft token is kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from specbench.engine.tree import DraftTree

# a method's draft budget: verify each draft whole (its paper's setting) or the part worth its cost here
BUDGETS = ("default", "auto")
AUTO = "auto"
RUN_BUDGETS = (*BUDGETS, "both")  # --budget: both = each drafting method run both ways, side by side

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


@dataclass
class Selection:
    """The kept nodes (tree order) and the model's expected tokens and seconds for the step."""

    keep: list[int]
    expected_tokens: float
    expected_seconds: float


class DraftBudget:
    """Online per-step choice of the verified subset of a ranked draft (one per drafter and task).

    ``cost(n, context)`` = seconds of a target forward of ``n`` new tokens (an array) after ``context``
    cached tokens (the cost profile's T, ``specbench/profiling/cost_profile.py``; ``context`` may be None).
    """

    def __init__(self, cost: Callable[..., np.ndarray], seed: int = 0) -> None:
        self.cost = cost
        self.stats = AcceptanceStats()
        self.rng = np.random.default_rng(seed)
        self._rates: np.ndarray | None = None  # this step's draw (``depth_hint`` draws, ``select`` reuses it)

    def _cost(self, n: np.ndarray, context: int | None) -> np.ndarray:
        return np.asarray(self.cost(n, context), dtype=float)

    def _step_rates(self) -> np.ndarray:
        if self._rates is None:
            self._rates = self.stats.sample_rates(self.rng)
        return self._rates

    def path_probs(self, tree: DraftTree) -> np.ndarray:
        """``P(v)`` per node: the product of this step's bucket rates along its path."""
        depth, rank = AcceptanceStats.buckets(tree)
        p = self._step_rates()[depth, rank]
        out = np.empty(len(tree))
        for i, parent in enumerate(tree.parents):
            out[i] = p[i] * (out[parent] if parent >= 0 else 1.0)
        return out

    def select(self, tree: DraftTree, draft_s: float = 0.0, aux_rows: int = 0, context: int | None = None) -> Selection:
        """The prefix-closed subset of ``tree`` with the most expected tokens per second, verified after
        ``context`` cached tokens."""
        probs = self.path_probs(tree)
        order = np.argsort(-probs, kind="stable")  # parents first on ties (a parent's index is smaller)
        gained = np.concatenate([[1.0], 1.0 + np.cumsum(probs[order])])  # [k] expected tokens keeping k nodes
        seconds = self._cost(np.arange(len(tree) + 1) + 1 + aux_rows, context) + draft_s
        k = int(np.argmax(gained / seconds))
        return Selection(sorted(order[:k].tolist()), float(gained[k]), float(seconds[k]))

    def select_batch(self, trees: list[DraftTree | None], aux_rows: list[int], cost_rows: Callable[..., np.ndarray],
                     context: int | None = None, draft_s: float = 0.0) -> list[list[int]]:
        """The kept nodes of each sequence of a batched step whose forward is padded to the longest one:
        every sequence keeps its most likely nodes up to ``m`` rows (root and auxiliary rows included), ``m``
        chosen for the most expected tokens of the whole batch per second of ``cost_rows(m, context)``.

        Example: two sequences whose chains' nodes are accepted with 0.9 and 0.1: at ``m = 3`` the first
        gains 0.9 + 0.81 tokens and the second 0.1 + 0.01, both paying the 3-row padded forward.
        """
        probs = [self.path_probs(t) if t is not None and len(t) else np.zeros(0) for t in trees]
        orders = [np.argsort(-p, kind="stable") for p in probs]
        sums = [np.concatenate([[0.0], np.cumsum(p[o])]) for p, o in zip(probs, orders)]
        ms = np.arange(max(1 + a for a in aux_rows), max(1 + a + len(p) for a, p in zip(aux_rows, probs)) + 1)
        gained = sum(1.0 + cum[np.clip(ms - 1 - a, 0, len(cum) - 1)] for cum, a in zip(sums, aux_rows))
        seconds = np.asarray(cost_rows(ms, context), dtype=float) + draft_s
        m = int(ms[int(np.argmax(gained / seconds))])
        return [sorted(o[: max(0, m - 1 - a)].tolist()) for o, a in zip(orders, aux_rows)]

    def depth_hint(self, context: int | None = None) -> int:
        """How deep a draft is worth making: the best length of a chain of first-ranked nodes, plus one so
        the next depth keeps being tried (at least 1). Starts a step: draws the step's rates."""
        self._rates = None
        p = self._step_rates()[:, 0]
        gained = np.concatenate([[1.0], 1.0 + np.cumsum(np.cumprod(p))])
        seconds = self._cost(np.arange(len(gained)) + 1, context)
        return int(np.argmax(gained / seconds)) + 1

    def observe(self, tree: DraftTree | None, accepted_nodes: list[int]) -> None:
        """After every step that drafted (``tree`` None: nothing was verified): learn, and end the step."""
        self.stats.update(tree, accepted_nodes)
        self._rates = None
