"""``budget=auto``'s first choice of every step: draft, or run a plain step (one row, the drafter not called).

A step that drafts pays for the drafter, the wider verify forward and the drafting step's own bookkeeping; a plain
step pays for a one-row forward and emits exactly one token. With ``A`` sequences in the forward, of which the
``k`` with the best expected gains draft, the step's expected tokens per second are

    value(k) = (A + sum over the k of (g_i - 1)) / (sum over the k of D + F(m_k, A) + O(k > 0, A))

- ``g_i``: tokens a drafted step of sequence i emits: the budget's decayed mean over every sequence's drafted
  steps (``DraftGains``, about 50 steps of memory), moved towards the sequence's own recent drafted steps
  (about 10) as if those were ``OWN_WEIGHT`` times fewer: the budget's mean keeps one unlucky step from
  switching drafting off (a drafted step's tokens vary from 1 to 5 around a mean near the threshold), the
  sequence's own steps let a sequence whose text turns repetitive draft while the others do not. The
  budget's later choice of how much of the draft to verify (``DraftBudget.select``) is inside it;
- ``D``: one sequence's drafting seconds; ``F``: the verify forward of ``A`` sequences, for ``k = 0`` the plain
  one-row forward ``F_1`` and else ``F_1`` times the mean, over the budget's drafted steps, of each one's forward
  price over the plain one's at its context (the mean of the prices, not the price of the mean width: a PLD
  step verifies one row or six, and on a CPU ``T(3)`` can exceed ``T(6)``); ``O``: the step's overhead; all
  three calibrated online (``step_costs.py``).

The step drafts for the best ``k``; ties go to fewer drafts, so the plain step wins when drafting does not
pay. Before ``WARM_STEPS`` drafted steps the budget knows nothing and every sequence drafts.

**Exploring.** A skipped drafter learns nothing, so a skipped sequence drafts now and then anyway (a probe),
as often as its price allows: a probe loses ``loss = 1 - value(k + 1) / value(k)`` of the step (the next
sequence drafting too), and it is made once that loss, spread over the steps since the sequence last drafted,
is at most ``PROBE_COST`` (0.5%), and in any case after ``PROBE_MAX`` skipped steps. So probing costs about
0.5% of the throughput (more where one probe costs several plain steps, as EAGLE's catch-up after a long skip:
the loss is priced as a share of one step), a cheap drafter that loses under 0.5% (PLD or REST finding no match)
keeps drafting every step, and a sequence whose text turns repetitive is found within ``loss / PROBE_COST`` steps.

Example: one sequence, a plain step costs 40 ms; drafting costs 10 ms and the forward of its 4 rows 48 ms,
and drafted steps emit 1.4 tokens: value(1) = 1.4 / 58 ms < value(0) = 1 / 40 ms: skip. At 2 tokens per
drafted step: 2 / 58 > 1 / 40: draft.

>>> best_k([2.0], [0.010], lambda k: 0.040 if k == 0 else 0.048, lambda k: 0.0, 1)
1
>>> best_k([1.4], [0.010], lambda k: 0.040 if k == 0 else 0.048, lambda k: 0.0, 1)
0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from specbench.engine.step_costs import DecayedMean

GAIN_DECAY = 0.98  # the budget's mean, per drafted step: about 50 steps of memory
OWN_DECAY = 0.9  # a sequence's own mean: about 10 of its drafted steps (its text turns repetitive, or stops being so)
OWN_WEIGHT = 0.5  # a sequence's own steps count half as much as the budget's
WARM_STEPS = 4  # drafted steps a budget sees before it may skip
PROBE_COST = 0.005  # the share of throughput probes may lose
PROBE_MAX = 128  # skipped steps in a row after which a sequence probes whatever it costs


def values(gains: list[float], draft_s: list[float], forward: Callable[[int], float],
           overhead: Callable[[int], float], active: int) -> np.ndarray:
    """``value(k)`` (module docstring) for k = 0 .. len(gains): the candidate sequences' ``gains`` best first, with
    their drafting seconds; ``forward(k)`` and ``overhead(k)`` are the forward's and the rest of the step's
    seconds when ``k`` sequences draft, in a step of ``active`` sequences."""
    ks = np.arange(len(gains) + 1)
    tokens = active + np.concatenate([[0.0], np.cumsum(np.asarray(gains, dtype=float) - 1.0)])
    seconds = np.concatenate([[0.0], np.cumsum(draft_s)]) + np.array([forward(int(k)) + overhead(int(k)) for k in ks])
    return tokens / np.maximum(seconds, 1e-12)


def best_k(gains: list[float], draft_s: list[float], forward: Callable[[int], float],
           overhead: Callable[[int], float], active: int) -> int:
    """How many of the candidate sequences should draft: the ``k`` of highest ``value(k)``, the fewest on ties."""
    return int(np.argmax(values(gains, draft_s, forward, overhead, active)))


def probe_due(skipped: int, loss: float) -> bool:
    """Whether a sequence that skipped ``skipped`` steps in a row probes now, a probe losing ``loss`` of a step.

    >>> probe_due(0, 0.005), probe_due(8, 0.05), probe_due(9, 0.05), probe_due(127, 0.9), probe_due(128, 0.9)
    (True, False, True, False, True)
    """
    return skipped >= PROBE_MAX or loss <= PROBE_COST * (skipped + 1)


@dataclass
class SequenceState:
    """One sequence's drafting history in a generation (created at its start)."""

    gain: DecayedMean = field(default_factory=lambda: DecayedMean(OWN_DECAY))
    skipped: int = 0  # plain steps in a row
    drafted_steps: int = 0
    skipped_steps: int = 0
    predicted_s: float = 0.0  # the budget's priced seconds of this sequence's decode steps (its share)
    predicted_ar_s: float = 0.0  # the same tokens at the price of plain steps


class DraftGains:
    """A budget's tokens per drafted step and its forward's price relative to a plain step's, per number of
    sequences in the step (and over all), as decayed means."""

    def __init__(self) -> None:
        self.tokens: dict[int, DecayedMean] = {}
        self.ratios: dict[int, DecayedMean] = {}
        self.drafted = 0  # drafted sequence-steps seen

    @staticmethod
    def _get(table: dict[int, DecayedMean], active: int, default: float) -> float:
        for key in (active, 0):
            m = table.get(key)
            if m is not None and m.known:
                return m.mean
        return default

    def gain(self, active: int) -> float:
        return self._get(self.tokens, active, 1.0)

    def forward_ratio(self, active: int) -> float:
        return self._get(self.ratios, active, 1.0)

    def add(self, active: int, tokens: list[int], forward_ratio: float) -> None:
        for key in (active, 0):
            t = self.tokens.setdefault(key, DecayedMean(GAIN_DECAY))
            for n in tokens:
                t.add(float(n))
            self.ratios.setdefault(key, DecayedMean(GAIN_DECAY)).add(float(forward_ratio))
        self.drafted += len(tokens)


def expected_gain(gains: DraftGains, s: SequenceState, active: int) -> float:
    """The budget's mean tokens per drafted step, moved towards the sequence's own (module docstring).

    >>> g = DraftGains(); g.add(1, [2] * 60, 1.3)
    >>> s = SequenceState(); _ = [s.gain.add(4.0) for _ in range(40)]
    >>> round(expected_gain(g, s, 1), 2)  # the budget's 2 weighs 35 (60 steps decayed), the sequence's 4 about 10 x 0.5
    2.25
    """
    budget = gains.tokens.get(active) or gains.tokens.get(0)
    weight = budget.weight if budget is not None and budget.known else 0.0
    mean = gains.gain(active)
    own = s.gain.weight * OWN_WEIGHT if s.gain.known else 0.0
    return mean if own == 0 else (weight * mean + own * s.gain.mean) / (weight + own)


@dataclass(frozen=True)
class Choice:
    """A step's choice: which candidates draft (probes included), how many were chosen on their value (``k``), and
    what one more drafting sequence would have lost (``loss``, the probes' price)."""

    drafting: list[bool]
    k: int
    loss: float


def choose(states: list[SequenceState], gains: DraftGains, draft_s: float, plain_forward: float,
           overhead: Callable[[bool], float], active: int) -> Choice:
    """Which of the candidate ``states`` draft this step (see the module docstring), probes included;
    ``plain_forward``: the seconds of this step's forward if no sequence drafts."""
    if not states or gains.drafted < WARM_STEPS:
        return Choice([True] * len(states), len(states), 0.0)
    expected = [expected_gain(gains, s, active) for s in states]
    order = sorted(range(len(states)), key=lambda i: -expected[i])
    drafted_forward = plain_forward * gains.forward_ratio(active)
    value = values([expected[i] for i in order], [draft_s] * len(order),
                   lambda k: plain_forward if k == 0 else drafted_forward, lambda k: overhead(k > 0), active)
    k = int(np.argmax(value))
    loss = 1.0 - value[k + 1] / value[k] if k < len(states) else 0.0  # of one more sequence drafting
    return Choice(probe_or_skip(states, set(order[:k]), loss), k, loss)


def probe_or_skip(states: list[SequenceState], chosen: set[int], loss: float) -> list[bool]:
    """The ``chosen`` sequences draft; each other one probes when its probe is due, else skips (and counts it)."""
    out = []
    for i, s in enumerate(states):
        if i in chosen or probe_due(s.skipped, loss):
            out.append(True)
        else:
            s.skipped, s.skipped_steps = s.skipped + 1, s.skipped_steps + 1
            out.append(False)
    return out
