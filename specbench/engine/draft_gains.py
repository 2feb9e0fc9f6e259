"""A ``budget=auto`` budget's tokens per drafted step and the forward's price of those steps relative to a plain
step's, per number of sequences in the step (``draft_or_skip.py`` prices a step's choice with them).

>>> g = DraftGains(); g.add(1, [3, 1], 1.5)
>>> round(g.gain(1), 2), g.forward_ratio(1), g.drafted  # one step of two sequences: 3 tokens and 1 (decayed)
(1.99, 1.5, 2)
"""
from __future__ import annotations

from specbench.engine.step_costs import DecayedMean

GAIN_DECAY = 0.98  # the budget's mean, per drafted step: about 50 steps of memory
SIZE_PRIOR = 8.0  # pseudo sequence-steps of every size's mean in one size's tokens per drafted step (``gain``)


class DraftGains:
    """A budget's tokens per drafted step and its forward's price relative to a plain step's, per number of
    sequences in the step (and over all), as decayed means; and the same price of the steps that drafted only as
    a probe (``probe_ratios``: one node, plus the drafter's auxiliary rows); and the tokens of the steps drafted
    in the hot regime (``hot_tokens``: after a step that accepted its whole draft)."""

    def __init__(self) -> None:
        self.tokens: dict[int, DecayedMean] = {}
        self.hot_tokens: dict[int, DecayedMean] = {}
        self.ratios: dict[int, DecayedMean] = {}
        self.probe_ratios: dict[int, DecayedMean] = {}
        self.drafted = 0  # drafted sequence-steps seen

    @staticmethod
    def _get(table: dict[int, DecayedMean], active: int, default: float) -> float:
        for key in (active, 0):
            m = table.get(key)
            if m is not None and m.known:
                return m.mean
        return default

    def gain(self, active: int) -> float:
        """Tokens per drafted sequence-step in steps of ``active`` sequences: their mean, shrunk towards the mean
        of every size by ``SIZE_PRIOR`` pseudo-steps. Why: a batch size's first drafted step is one step of
        ``active`` sequences; counted alone, one step whose drafts found nothing (a prompt with no match yet)
        set that size's mean to 1 token, and its steps skipped drafting for the rest of the run.

        >>> g = DraftGains(); g.add(1, [3] * 12, 1.2); g.add(4, [1] * 4, 1.1)
        >>> round(g.gain(1), 2), round(g.gain(4), 2), round(g.gain(2), 2)  # (size 2: never seen, every size's)
        (2.76, 1.97, 2.44)
        """
        pooled = self.tokens.get(0)
        if pooled is None or not pooled.known:
            return 1.0
        own = self.tokens.get(active) if active else None
        if own is None or not own.known:
            return pooled.mean
        return (own.total + SIZE_PRIOR * pooled.mean) / (own.weight + SIZE_PRIOR)

    def forward_ratio(self, active: int) -> float:
        return self._get(self.ratios, active, 1.0)

    def probe_ratio(self, active: int, first: float) -> float:
        """A probe step's forward over a plain one's; before any probe was seen, ``first``."""
        return self._get(self.probe_ratios, active, first)

    def add(self, active: int, tokens: list[int], forward_ratio: float, probe: bool = False,
            hot: list[bool] | None = None) -> None:
        """One step in which ``len(tokens)`` sequences drafted and emitted ``tokens``; ``probe``: only as a probe;
        ``hot``: which of them drafted in the hot regime."""
        for key in (active, 0):
            t = self.tokens.setdefault(key, DecayedMean(GAIN_DECAY))
            for n, h in zip(tokens, hot or [False] * len(tokens)):
                t.add(float(n))
                if h:
                    self.hot_tokens.setdefault(key, DecayedMean(GAIN_DECAY)).add(float(n))
            self.ratios.setdefault(key, DecayedMean(GAIN_DECAY)).add(float(forward_ratio))
            if probe:
                self.probe_ratios.setdefault(key, DecayedMean(GAIN_DECAY)).add(float(forward_ratio))
        self.drafted += len(tokens)
