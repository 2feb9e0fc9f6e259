"""What ``budget=auto`` learns of a drafter's acceptance (``AcceptanceStats``): decayed counts of trials and
acceptances per (depth, sibling rank) bucket, drawn from by Thompson sampling (``budget.py``'s docstring), and
how a tree's nodes fall into those buckets (``sibling_ranks``), or which nodes are the drafter's first guesses.

**Two regimes.** Acceptance runs in streaks: once a drafter has the text (PLD or suffix on code the answer
repeats), whole drafts are accepted step after step, and elsewhere few are. Pooled, the rates of such a drafter
are those of neither, and a budget pooling them cut suffix's 27-token drafts on a repeated HumanEval block to 6
(29 steps where drafting without ``auto`` took 20: 90% of its best fixed budget). So each sequence is ``hot``
after a step that accepted its whole draft to its deepest node (``is_hot``), and the buckets are counted per
regime. A hot bucket with no trials yet starts from the cold bucket's rate, or from the bucket above it, when
either is better than even (``PRIOR_STRENGTH`` pseudo-trials): a streak's depth grows as fast as its accepted
steps show, not by one untried bucket at a time.

**Siblings.** A node's first-ranked child starts at even odds (Beta(1, 1)); a later sibling starts at the lesser of
its elder's rate and what its elders' rates leave of one token (``_sibling_priors``), since the accepted path goes
through at most one child and a drafter lists its children best first. At even odds each, EAGLE's six untried root
guesses were priced at three tokens a step, where they held about half a token: the budget's expected tokens ran at
twice those accepted. A node keeps its rank in the drafter's tree after the budget cut some of its siblings
(``DraftTree.ranks``): a kept third guess is learned as a third guess, not as the cut tree's second.

Example: a tree whose root has children a and b, and a a child c: depths 1, 1, 2 and ranks 0, 1, 0; once a is
accepted and b rejected, bucket (1, 0) has one trial and one acceptance, (1, 1) one trial and none, and (2, 0)
one trial (c's parent was accepted).
"""
from __future__ import annotations

import numpy as np

from specbench.tree.draft_tree import DraftTree

MAX_DEPTH_BUCKETS = 16  # depths beyond share the last bucket
MAX_RANK_BUCKETS = 8  # sibling ranks beyond share the last bucket
DECAY = 0.995  # per step: about 200 steps of memory
PRIOR = (1.0, 1.0)  # Beta(accepted, rejected) pseudo-counts
PRIOR_STRENGTH = sum(PRIOR)  # pseudo-trials of a hot bucket's prior (its mean: the module docstring)
MIN_PRIOR = 0.01  # the least prior mean of a bucket (a sibling whose elders' rates leave nothing)
PROBE_WIDTH = 8  # the most first-token guesses a probe verifies (``first_guesses``)


def is_hot(tree: DraftTree | None, accepted_nodes: list[int]) -> bool:
    """Whether a verified step accepted its draft to the draft's deepest node (the next step is in a streak).

    >>> t = DraftTree((5, 6, 7), (-1, 0, -1))  # depths 1, 2, 1
    >>> is_hot(t, [0, 1]), is_hot(t, [0]), is_hot(None, [])
    (True, False, False)
    """
    return tree is not None and len(tree) > 0 and len(accepted_nodes) == max(tree.depths())


def sibling_ranks(tree: DraftTree) -> list[int]:
    """Each node's position among its parent's children, in tree order, as its drafter proposed them
    (``DraftTree.sibling_ranks``: the verified tree is the budget's cut of the drafter's).

    >>> sibling_ranks(DraftTree((5, 6, 7, 8), (-1, 0, -1, 0)))
    [0, 0, 1, 1]
    """
    return tree.sibling_ranks()


def first_guesses(tree: DraftTree, width: int = PROBE_WIDTH) -> list[int]:
    """What a probe verifies (``budget.DraftBudget.select``): the drafter's own first-token guesses, the root's
    children in its order (every drafter lists children best first), at most ``width``; not the budget's sampled
    ranking, which after rejections is a random draw among buckets that all look bad. Why the whole first level
    and not the first guess alone: a retrieval drafter spreads its first token over several guesses (REST on
    HumanEval/148: about five of a tenth of a token each, 0.8 tokens in all), so a probe of its first guess
    showed little of what drafting gains there, and the budget kept skipping where drafting paid 1.3 times a
    plain step's rate (88% of its best fixed budget).

    >>> t = DraftTree((5, 6, 7, 8), (-1, 0, -1, -1))  # root children 0, 2, 3; 1 is 0's child
    >>> first_guesses(t), first_guesses(t, 2)
    ([0, 2, 3], [0, 2])
    """
    return [i for i, p in enumerate(tree.parents) if p == -1][:width]


def probe_nodes(tree: DraftTree, probs: np.ndarray, order: np.ndarray,
                seconds: np.ndarray) -> tuple[list[int], float, float]:
    """What a probe verifies (``budget.DraftBudget.select``), with its expected tokens and seconds: its drafter's
    first-token guesses, then as many of the next nodes (``order``: parents first, so prefix-closed) as make the
    cheapest forward (``seconds[k]``: keeping k nodes; the fewest on ties). On this project's CPU ``T(4)`` is a
    fifth below ``T(2)``, and a PLD probe of its first guess paid the dearest forward of all. Not by the sampled
    rates (``probs``): untried buckets draw around their prior's 0.5, which widened Token Recycling's probes of 8
    guesses to 15-25 nodes at 53-76 ms a forward (a plain one: 37), so they came once in 80-100 steps.

    >>> t = DraftTree((5, 6, 7, 8), (-1, 0, 1, 2))  # a chain: one guess
    >>> probe_nodes(t, np.full(4, 0.5), np.arange(4), np.array([40.0, 48.0, 41.0, 39.0, 45.0]))[0]
    [0, 1, 2]
    """
    guesses = first_guesses(tree)
    rest = [int(i) for i in order if int(i) not in guesses]  # (at most PROBE_WIDTH guesses: a list will do)
    tokens = 1.0 + float(probs[guesses].sum()) + np.concatenate([[0.0], np.cumsum(probs[rest])])
    sizes = len(guesses) + np.arange(len(rest) + 1)
    j = int(np.argmin(seconds[sizes]))
    return sorted(guesses + rest[:j]), float(tokens[j]), float(seconds[sizes[j]])


class AcceptanceStats:
    """Decayed counts of trials and acceptances per (depth, sibling rank) bucket, in the cold regime
    (``trials``, ``accepted``) and the hot one (``hot_trials``, ``hot_accepted``; module docstring)."""

    def __init__(self) -> None:
        shape = (MAX_DEPTH_BUCKETS, MAX_RANK_BUCKETS)
        self.trials = np.zeros(shape)
        self.accepted = np.zeros(shape)
        self.hot_trials = np.zeros(shape)
        self.hot_accepted = np.zeros(shape)

    def rates(self) -> np.ndarray:
        """Posterior mean acceptance rate per cold bucket, ``[depth - 1, rank]``; always in (0, 1)."""
        mean = self._sibling_priors(np.full(self.trials.shape[0], PRIOR[0] / PRIOR_STRENGTH), self.accepted,
                                    self.trials)
        return (self.accepted + PRIOR_STRENGTH * mean) / (self.trials + PRIOR_STRENGTH)

    @staticmethod
    def _sibling_priors(first: np.ndarray, accepted: np.ndarray, trials: np.ndarray) -> np.ndarray:
        """Each bucket's prior mean (``PRIOR_STRENGTH`` pseudo-trials): ``first[depth]`` for a first-ranked node;
        for rank r the lesser of rank r - 1's posterior mean and what ranks 0 .. r - 1's posterior means leave of 1
        (module docstring: the accepted path goes through at most one of a node's children).

        >>> s = AcceptanceStats()
        >>> np.round(s._sibling_priors(np.full(16, 0.5), s.accepted, s.trials)[0, :3], 2)  # untried: 0.5, 0.5, 0
        array([0.5 , 0.5 , 0.01])
        >>> s.trials[0, :2], s.accepted[0, :2] = 20.0, (8.0, 2.0)  # 8 of 20, 2 of 20: 0.41, 0.13; untried: as its elder
        >>> np.round(s._sibling_priors(np.full(16, 0.5), s.accepted, s.trials)[0, :4], 2)
        array([0.5 , 0.41, 0.13, 0.13])
        """
        mean, post = np.empty_like(trials), np.empty_like(trials)
        for r in range(trials.shape[1]):
            m = first if r == 0 else np.minimum(post[:, r - 1], 1.0 - post[:, :r].sum(axis=1))
            mean[:, r] = np.clip(m, MIN_PRIOR, 1.0 - MIN_PRIOR)
            post[:, r] = (accepted[:, r] + PRIOR_STRENGTH * mean[:, r]) / (trials[:, r] + PRIOR_STRENGTH)
        return mean

    def _hot_prior(self) -> np.ndarray:
        """Each hot bucket's prior mean: for a first-ranked node the best of even odds, the cold bucket's rate and
        the hot bucket above's posterior mean (computed depth by depth); for a later sibling as ``_sibling_priors``."""
        cold = self.rates()[:, 0]
        first = np.empty_like(cold)
        above = 0.5
        for d in range(cold.shape[0]):
            first[d] = max(above, cold[d])
            above = max(0.5, (self.hot_accepted[d, 0] + PRIOR_STRENGTH * first[d])
                        / (self.hot_trials[d, 0] + PRIOR_STRENGTH))
        return self._sibling_priors(first, self.hot_accepted, self.hot_trials)

    def sample_rates(self, rng: np.random.Generator, hot: bool = False) -> np.ndarray:
        """One draw per bucket of the regime from its Beta posterior, ``[depth - 1, rank]``, clipped into (0, 1)."""
        accepted, trials = (self.hot_accepted, self.hot_trials) if hot else (self.accepted, self.trials)
        prior = (self._hot_prior() if hot else
                 self._sibling_priors(np.full(trials.shape[0], PRIOR[0] / PRIOR_STRENGTH), accepted, trials))
        prior = prior * PRIOR_STRENGTH
        return np.clip(rng.beta(accepted + prior, trials - accepted + PRIOR_STRENGTH - prior), 1e-9, 1 - 1e-9)

    @staticmethod
    def buckets(tree: DraftTree) -> tuple[np.ndarray, np.ndarray]:
        depth = np.minimum(np.array(tree.depths()), MAX_DEPTH_BUCKETS) - 1
        rank = np.minimum(np.array(sibling_ranks(tree)), MAX_RANK_BUCKETS - 1)
        return depth, rank

    def update(self, tree: DraftTree | None, accepted_nodes: list[int], hot: bool = False) -> None:
        """One step: older counts decay; a verified ``tree`` whose accepted path is ``accepted_nodes``
        (root excluded), drafted in the ``hot`` regime or not, adds its trials."""
        for counts in (self.trials, self.accepted, self.hot_trials, self.hot_accepted):
            counts *= DECAY
        if tree is None:
            return
        trials, accepted = (self.hot_trials, self.hot_accepted) if hot else (self.trials, self.accepted)
        depth, rank = self.buckets(tree)
        on_path = set(accepted_nodes)
        reached = {-1} | on_path
        for i, p in enumerate(tree.parents):
            if p in reached:  # the node's parent was accepted: a trial of its bucket
                trials[depth[i], rank[i]] += 1
                accepted[depth[i], rank[i]] += i in on_path
