"""A ``budget=auto`` budget's tokens per drafted step and the forward's price of those steps relative to a plain
step's, per number of sequences in the step (``draft_or_skip.py`` prices a step's choice with them).

>>> g = DraftGains(); g.add(1, [3, 1], 1.5)
>>> round(g.gain(1), 2), g.forward_ratio(1), g.drafted  # one step of two sequences: 3 tokens and 1 (decayed)
(1.99, 1.5, 2)
"""
from __future__ import annotations

from collections import deque
from typing import Callable

import numpy as np

from specbench.budget.step_costs import DecayedMean

GAIN_DECAY = 0.98  # the budget's mean, per drafted step: about 50 steps of memory
SIZE_PRIOR = 8.0  # pseudo sequence-steps of every size's mean in one size's tokens per drafted step (``gain``)
ROWS_KEPT = 64  # the last drafted sequence-steps' verified rows kept per batch size (``padded_forward``)
ROWS_KNOWN = 8  # a size's own rows price its forward once it has this many; before, every size's


class DraftGains:
    """A budget's tokens per drafted step and its forward's price relative to a plain step's, per number of
    sequences in the step (and over all), as decayed means; and the same price of the steps that drafted only as
    a probe (``probe_ratios``: one node, plus the drafter's auxiliary rows); and the tokens of the steps drafted
    in the hot regime (``hot_tokens``: after a step that accepted its whole draft)."""

    def __init__(self) -> None:
        self.tokens: dict[int, DecayedMean] = {}
        self.hot_tokens: dict[int, DecayedMean] = {}
        self.cold_tokens: dict[int, DecayedMean] = {}  # the others: what a cold sequence's drafted step emits
        self.ratios: dict[int, DecayedMean] = {}
        self.probe_ratios: dict[int, DecayedMean] = {}
        self.probe_tokens: dict[int, DecayedMean] = {}  # tokens a probing sequence emitted
        self.cold_hits: dict[int, DecayedMean] = {}  # tokens of cold drafted steps that accepted their first token
        self.rows: dict[int, deque[int]] = {}  # each drafted (not probing) sequence's rows in its verify forward
        self.drafted = 0  # drafted sequence-steps seen that verified a draft (``add``'s ``verified``)

    @staticmethod
    def _get(table: dict[int, DecayedMean], active: int, default: float) -> float:
        for key in (active, 0):
            m = table.get(key)
            if m is not None and m.known:
                return m.mean
        return default

    def cold_gain(self, active: int) -> float:
        """``gain`` over the steps drafted cold (not after a step that accepted its whole draft); before any,
        ``gain``. Why: priced with the mean of every drafted step, hot streaks included, samd@auto's cold steps on
        HumanEval expected 2.1 tokens and emitted 1.6.

        >>> g = DraftGains(); g.add(1, [5, 5, 1, 1], 2.0, hot=[True, True, False, False])
        >>> round(g.gain(1), 2), round(g.cold_gain(1), 2)
        (2.96, 1.0)
        """
        return self._shrunk(self.cold_tokens, active) if self.cold_tokens.get(0) is not None else self.gain(active)

    def gain(self, active: int) -> float:
        """Tokens per drafted sequence-step in steps of ``active`` sequences: their mean, shrunk towards the mean
        of every size by ``SIZE_PRIOR`` pseudo-steps. Why: a batch size's first drafted step is one step of
        ``active`` sequences; counted alone, one step whose drafts found nothing (a prompt with no match yet)
        set that size's mean to 1 token, and its steps skipped drafting for the rest of the run.

        >>> g = DraftGains(); g.add(1, [3] * 12, 1.2); g.add(4, [1] * 4, 1.1)
        >>> round(g.gain(1), 2), round(g.gain(4), 2), round(g.gain(2), 2)  # (size 2: never seen, every size's)
        (2.76, 1.97, 2.44)
        """
        return self._shrunk(self.tokens, active)

    @staticmethod
    def _shrunk(table: dict[int, DecayedMean], active: int) -> float:
        pooled = table.get(0)
        if pooled is None or not pooled.known:
            return 1.0
        own = table.get(active) if active else None
        if own is None or not own.known:
            return pooled.mean
        return (own.total + SIZE_PRIOR * pooled.mean) / (own.weight + SIZE_PRIOR)

    def forward_ratio(self, active: int) -> float:
        return self._get(self.ratios, active, 1.0)

    def padded_forward(self, active: int, ks: np.ndarray, price: Callable[[np.ndarray], np.ndarray],
                       fallback: float) -> np.ndarray:
        """The expected seconds of a verify forward in which ``ks`` of the ``active`` sequences draft (an array of
        counts): the forward is padded to its widest sequence, so with ``F`` the distribution of one drafting
        sequence's rows (its recent drafted steps) the widest of ``k`` has ``P(max <= r) = F(r)^k``, priced by
        ``price(rows)`` (calibrated seconds). Why: a mean price of past drafted steps, learned mostly from steps
        where one sequence drafted and found nothing (PLD in a batch of 8), priced a step where all 8 draft at
        1.09 plain steps; such steps measured 1.4-1.7 (pld@auto at B=8: 0.95x). ``fallback``: the seconds when no
        rows were seen.

        >>> g = DraftGains(); _ = [g.add(2, [1], 1.0, rows=[1]) for _ in range(6)]; _ = [g.add(2, [3], 2.0, rows=[5]) for _ in range(2)]
        >>> [round(float(x), 3) for x in g.padded_forward(2, np.array([1, 2]), lambda r: 1.0 + 0.25 * (r - 1), 9.0)]
        [1.25, 1.438]
        """
        sample = self.rows.get(active)
        if sample is None or len(sample) < ROWS_KNOWN:
            sample = self.rows.get(0)
        if not sample:
            return np.full(len(ks), fallback)
        values, counts = np.unique(np.fromiter(sample, dtype=int), return_counts=True)
        cdf = np.cumsum(counts) / counts.sum()
        at_most = cdf[None, :] ** np.asarray(ks, dtype=float)[:, None]  # [k, r]: P(widest of k <= r)
        prob = np.diff(np.concatenate([np.zeros((len(ks), 1)), at_most], axis=1), axis=1)
        return prob @ np.asarray(price(values), dtype=float)

    def probe_ratio(self, active: int, first: float) -> float:
        """A probe step's forward over a plain one's; before any probe was seen, ``first``."""
        return self._get(self.probe_ratios, active, first)

    def probe_gain(self, active: int, first: float) -> float:
        """Tokens a probing sequence emits (it verifies one node, and only when its drafter found one); before
        any probe was seen, ``first``. Why: priced as a drafted step's mean (at most 2), pld@auto's probes at B=8
        were credited 0.3 tokens and emitted 0.07; waste so underpriced let 15% of its steps probe (0.97x)."""
        return self._get(self.probe_tokens, active, first)

    def as_drafted(self, active: int, tokens: int, probing: bool) -> float:
        """What a step emitted, as the tokens of a whole drafted step: a probe verifies only its drafter's
        first-token guesses, so one that missed is a drafted step that would have emitted its 1 token, and one that
        hit would have emitted what a cold drafted step that hit its first token emits (its own tokens before any
        was seen). Why: counted as they came, a hit probe was a cold drafted step of 2 tokens where the whole draft
        emits more, so the cold mean fell the more the budget probed, and a budget that skipped came to skip more
        (rest@auto on ``oracle46v-rest``: skip runs of 25-88 steps, 54% of its steps plain).

        >>> g = DraftGains(); g.add(1, [1, 4], 1.2)
        >>> g.as_drafted(1, 1, True), g.as_drafted(1, 2, True), g.as_drafted(1, 2, False)
        (1.0, 4.0, 2.0)
        """
        if not probing or tokens <= 1:
            return float(tokens)
        return max(float(tokens), self._get(self.cold_hits, active, float(tokens)))

    def add(self, active: int, tokens: list[int], forward_ratio: float, probe: bool = False, *,
            hot: list[bool] | None = None, rows: list[int] | None = None, probing: list[bool] | None = None,
            verified: int | None = None) -> None:
        """One step in which ``len(tokens)`` sequences drafted and emitted ``tokens``; ``probe``: only as a probe;
        ``hot``: which of them drafted in the hot regime; ``rows``: the rows each of those not probing verified;
        ``probing``: which of them drafted as a probe (default: all if ``probe``); ``verified``: how many of them
        verified more than their root (default: all). Only those count towards ``drafted``, which warms the
        budget up (``draft_or_skip.WARM_STEPS``): a step whose drafter found nothing is a plain step that says
        nothing of what a draft emits, yet counted, four such steps at the start of a GSM8K answer made pld@auto
        expect 1 token a draft and skip 40 steps that drafting without ``auto`` ran at 1.44x. They still count in
        the means (1 token at a plain forward's price): how often the drafter finds nothing is part of its value.

        >>> g = DraftGains(); g.add(1, [1, 1, 3], 1.0, verified=1)
        >>> g.drafted, round(g.gain(1), 2)
        (1, 1.68)
        """
        probing = probing or [probe] * len(tokens)
        hot = hot or [False] * len(tokens)
        drafted = [self.as_drafted(active, n, p) for n, p in zip(tokens, probing)]
        for key in (active, 0):
            self.rows.setdefault(key, deque(maxlen=ROWS_KEPT)).extend(rows or [])
            t = self.tokens.setdefault(key, DecayedMean(GAIN_DECAY))
            for n, d, h, p in zip(tokens, drafted, hot, probing):
                t.add(d)
                (self.hot_tokens if h else self.cold_tokens).setdefault(key, DecayedMean(GAIN_DECAY)).add(d)
                if n >= 2 and not (h or p):
                    self.cold_hits.setdefault(key, DecayedMean(GAIN_DECAY)).add(float(n))
            self.ratios.setdefault(key, DecayedMean(GAIN_DECAY)).add(float(forward_ratio))
            if probe:
                self.probe_ratios.setdefault(key, DecayedMean(GAIN_DECAY)).add(float(forward_ratio))
            for n, p in zip(tokens, probing):
                if p:
                    self.probe_tokens.setdefault(key, DecayedMean(GAIN_DECAY)).add(float(n))
        self.drafted += len(tokens) if verified is None else verified
