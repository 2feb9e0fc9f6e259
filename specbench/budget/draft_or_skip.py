"""``budget=auto``'s first choice of every step: draft, or run a plain step (one row, the drafter not called).

A step that drafts pays for the drafter, the wider verify forward and the drafting step's own bookkeeping; a plain
step pays for a one-row forward and emits exactly one token. With ``A`` sequences in the forward, of which the
``k`` with the best expected gains draft, the step's expected tokens per second are

    value(k) = (A + sum over the k of (g_i - 1)) / (sum over the k of D + F(m_k, A) + O(k > 0, A))

- ``g_i``: tokens a drafted step of sequence i emits: the budget's decayed mean over every sequence's drafted
  steps in the sequence's regime, hot or cold (below; ``DraftGains``, about 50 steps of memory), moved towards
  the sequence's own recent drafted steps (about 10) as if those were ``OWN_WEIGHT`` times fewer: the budget's
  mean keeps one unlucky step from switching drafting off (a drafted step's tokens vary from 1 to 5 around a mean
  near the threshold), the sequence's own steps let a sequence whose text turns repetitive draft while the others
  do not. For a hot sequence (its last step accepted its whole draft, ``acceptance_stats.is_hot``) the budget's
  mean is that of the hot drafted steps: a probe that hits starts a streak, and the streak drafts until a draft is
  cut short. The budget's later choice of how much of the draft to verify (``DraftBudget.select``) is inside it;
- ``D``: one sequence's drafting seconds; ``F``: the verify forward of ``A`` sequences, for ``k = 0`` the plain
  one-row forward ``F_1`` and else the expected price of a forward padded to the widest of ``k`` drafting
  sequences, each one's rows drawn from the budget's recent drafted steps (``DraftGains.padded_forward``: the
  mean of the prices, not the price of the mean width, since a PLD step verifies one row or six and on a CPU
  ``T(3)`` can exceed ``T(6)``; and the widest of ``k``, since at batch 8 a step where all draft is wide far more
  often than one where a single sequence does); ``O``: the step's overhead; all three calibrated online
  (``step_costs.py``).

The step drafts for the best ``k``, but skips only when the plain step's value beats every drafting choice by
more than ``SKIP_MARGIN`` (1%): within that the decayed means of noisy steps cannot tell the two apart, and a
drafting step keeps learning while a skipped one waits for a probe. That matters for a nearly free drafter
(suffix, PLD): a step whose lookup finds nothing costs what a plain step costs, so skipping saves nothing, but a
budget that had learned to skip on such steps missed the copied passages of a second turn (suffix on MT-Bench
drafted 74% of its steps, 0.93x of its speedup without ``auto``). At 2% the steps it let draft cost up to 2%
each (rest@auto: 0.95x on GSM8K at batch 4 and on llama.cpp, its calibrated prediction 2-3% low). Before
``WARM_STEPS`` drafted steps that verified a draft (a lookup that found nothing says nothing of what a draft emits:
``DraftGains.add``) the budget knows nothing and every sequence drafts; then its steps are plain until
it has measured a few one-row forwards (``StepCosts.plain_unpriced``: the plain step is not priced by the wide
forwards' calibration).

**Catching up.** A drafter that reads the target's hidden states (EAGLE, Hydra, Medusa, ReDrafter) first reads
every row it missed: at its first draft of a generation the whole prompt (3 s after an 8k prompt on a CPU), after
skipped steps one row each. ``D`` includes those rows (``StepCosts.catch_up_seconds``). A choice spreads them over
the drafted steps the generation still has room for (``room / g``): reading an 8k prompt once pays for a long answer,
not for its last few tokens.

**Exploring.** A skipped drafter learns nothing, so a skipped sequence drafts now and then anyway (a probe). The
budget keeps a probe credit in seconds, across generations and tasks (``MethodLearning``): every step in which
sequences skip adds ``PROBE_COST`` (0.5%) of the step's priced seconds, in proportion to the sequences skipped. A
skipped sequence probes once the credit covers its probe's waste: the probe step's seconds beyond what its expected
tokens would have cost at the step's chosen rate, its whole catch-up included. A probe verifies its drafter's own
first-token guesses (``DraftBudget.select``, ``acceptance_stats.first_guesses``: one node for a chain, up to 8 for
REST's trie), and the next nodes too where the forward costs no more (on this CPU ``T(4) < T(2)``), whatever the
rates learned from the rejections that made the budget skip (a probe those rates cut to nothing verified nothing,
so they never recovered: suffix on GSM8K). So it is cheap: priced with the forward of the probes seen so far
(before the first, the cheapest forward it may widen to, over a plain step's), credited with the tokens probes
emitted (``DraftGains.probe_gain``; before the first, a drafted step's mean, at most ``PROBE_TOKENS``). Priced at a
drafted step's wide forward, Token Recycling (whose warm-up drafts from an empty matrix) probed once in 100 steps
and never recovered: 89% of its best fixed budget; priced so, 99% (``docs/measurements.md``). The credit then starts
again from zero, and at most one sequence probes a step; after the step a lone probe is charged only what it
wasted as priced (its seconds beyond its tokens' at plain steps) and gets the rest back, so a probe whose forward
costs no more than a plain step's, or that hit, or whose drafter found nothing, lets the next step probe again.
So probes spend at most 0.5% of the skipped steps' time whatever one costs: a cheap drafter that loses a tenth of a
step (PLD or REST finding no match) probes every 20 skipped steps, and EAGLE after an 8k prompt, whose first draft
wastes 30 plain steps, once in 6000.

Example: one sequence, a plain step costs 40 ms; drafting costs 10 ms and the forward of its 4 rows 48 ms,
and drafted steps emit 1.4 tokens: value(1) = 1.4 / 58 ms < value(0) = 1 / 40 ms: skip. At 2 tokens per
drafted step: 2 / 58 > 1 / 40: draft.

>>> best_k([2.0], [0.010], lambda k: 0.040 if k == 0 else 0.048, lambda k: 0.0, 1)
1
>>> best_k([1.4], [0.010], lambda k: 0.040 if k == 0 else 0.048, lambda k: 0.0, 1)
0
>>> best_k([1.44], [0.010], lambda k: 0.040 if k == 0 else 0.048, lambda k: 0.0, 1)  # 0.7% below plain: drafts
1
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from specbench.budget.draft_gains import DraftGains
from specbench.budget.step_costs import DecayedMean, StepCosts

OWN_DECAY = 0.9  # a sequence's own mean: about 10 of its drafted steps (its text turns repetitive, or stops being so)
OWN_WEIGHT = 0.5  # a sequence's own steps count half as much as the budget's
WARM_STEPS = 4  # drafted steps a budget sees before it may skip
PROBE_COST = 0.005  # the share of the skipped steps' seconds probes may spend
SKIP_MARGIN = 0.01  # a step skips only when plain's value beats drafting's by more than this share
PROBE_TOKENS = 2.0  # the most a probe emits: it verifies its drafter's first-token guesses alone


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
    """How many of the candidate sequences should draft (``pick`` of their ``values``)."""
    return pick(values(gains, draft_s, forward, overhead, active))


def pick(value: np.ndarray) -> int:
    """The ``k`` of highest ``value[k]`` (the fewest on ties), except that 0 (skip) needs a lead of more than
    ``SKIP_MARGIN`` over the best ``k >= 1``.

    >>> pick(np.array([1.0, 0.99, 0.5])), pick(np.array([1.0, 0.97, 0.5])), pick(np.array([1.0, 1.2, 1.2]))
    (1, 0, 1)
    """
    k = int(np.argmax(value))
    if k == 0 and len(value) > 1 and value[1:].max() >= value[0] * (1 - SKIP_MARGIN):
        k = 1 + int(np.argmax(value[1:]))
    return k


@dataclass
class SequenceState:
    """One sequence's drafting history in a generation (created at its start)."""

    gain: DecayedMean = field(default_factory=lambda: DecayedMean(OWN_DECAY))
    skipped: int = 0  # plain steps in a row
    drafted_steps: int = 0
    skipped_steps: int = 0
    predicted_s: float = 0.0  # the budget's priced seconds of this sequence's decode steps (its share)
    predicted_ar_s: float = 0.0  # the same tokens at the price of plain steps
    unseen: int = 0  # rows the drafter would read before drafting now (the loop sets it before ``plan``)
    blind: bool = False  # the generation runs without the states its drafter reads (``fetch_prompt_states``)
    room: int = 0  # tokens the generation may still emit (set with ``unseen``; 0: unknown)
    probing: bool = False  # this step drafts as a probe (``probe``): its draft verifies at least one node
    hot: bool = False  # its last step accepted its whole draft (set with ``unseen``; ``acceptance_stats.is_hot``)


@dataclass
class MethodLearning:
    """What a method's budgets on different tasks of one run share: the machine's step costs (``StepCosts``: the
    same forwards, drafter and catch-up whatever the text), the tokens per drafted step over every task (``gains``:
    the estimate a task starts from until it has ``WARM_STEPS`` drafted steps of its own, so a task after the first
    does not pay EAGLE's prompt catch-up four times to find out what the others already showed) and the probe
    credit."""

    costs: StepCosts
    gains: DraftGains = field(default_factory=DraftGains)
    probe_credit: float = 0.0  # seconds probes may spend (module docstring), kept across generations and tasks
    drafting: bool = True  # whether the last priced step chose to draft (not counting probes)
    probe_waste: float = 0.0  # the cheapest probe's waste at the last step that skipped (0: none seen yet)


def expected_gain(gains: DraftGains, s: SequenceState, active: int) -> float:
    """The budget's mean tokens per drafted step, moved towards the sequence's own (module docstring). For a hot
    sequence the budget's mean is that of its hot steps (with one step of the mean of all as a prior): a streak
    keeps drafting where the mean of every step would skip, and a probe that hits starts one. For a cold one it is
    that of the cold steps (``DraftGains.cold_gain``): a streak's tokens are not a cold step's.

    >>> g = DraftGains(); g.add(1, [2] * 60, 1.3)
    >>> s = SequenceState(); _ = [s.gain.add(4.0) for _ in range(40)]
    >>> round(expected_gain(g, s, 1), 2)  # the budget's 2 weighs 35 (60 steps decayed), the sequence's 4 about 10 x 0.5
    2.25
    """
    budget = gains.tokens.get(active) or gains.tokens.get(0)
    weight = budget.weight if budget is not None and budget.known else 0.0
    mean = gains.cold_gain(active)
    hot = (gains.hot_tokens.get(active) or gains.hot_tokens.get(0)) if s.hot else None
    if hot is not None and hot.known:
        mean = (hot.total + gains.gain(active)) / (hot.weight + 1.0)
    own = s.gain.weight * OWN_WEIGHT if s.gain.known else 0.0
    return mean if own == 0 else (weight * mean + own * s.gain.mean) / (weight + own)


@dataclass(frozen=True)
class Choice:
    """A step's choice: which candidates draft on their value (``drafting``, no probe yet), how many (``k``), the
    step's priced seconds (``seconds``) and, per candidate left out, its probe's waste in seconds (``waste``; inf
    for those chosen); ``lead``: the chosen value over the plain step's, less 1 (inf before the budget is warm)."""

    drafting: list[bool]
    k: int
    seconds: float
    waste: list[float]
    lead: float = float("inf")


def amortised(base: float, catch_up: float, gain: float, room: int) -> float:
    """One drafted step's drafting seconds with the catch-up spread over the ``room / gain`` drafted steps left.

    >>> amortised(0.01, 3.0, 2.0, 200), amortised(0.01, 3.0, 2.0, 0)  # 100 steps share 3 s; room unknown: all of it
    (0.04, 3.01)
    """
    return base + catch_up * (min(1.0, gain / room) if room > 0 else 1.0)


def choose(states: list[SequenceState], gains: DraftGains, base_s: list[float], catch_up_s: list[float],
           plain_forward: float, overhead: Callable[[bool], float], *, active: int,
           first_probe_ratio: float | None = None,
           price_rows: Callable[[np.ndarray], np.ndarray] | None = None) -> Choice:
    """Which of the candidate ``states`` draft this step on their value (module docstring), and each other one's
    probe waste. ``base_s``, ``catch_up_s``: each candidate's drafting and catch-up seconds; ``plain_forward``: the
    seconds of this step's forward if no sequence drafts; ``price_rows``: the seconds of a forward whose widest
    sequence verifies so many rows (None: drafted forwards at the budget's mean ratio)."""
    n = len(states)
    if not states or gains.drafted < WARM_STEPS:
        return Choice([True] * n, n, 0.0, [float("inf")] * n)
    expected = [0.0 if s.blind else expected_gain(gains, s, active) for s in states]  # (blind: never chosen)
    order = sorted(range(n), key=lambda i: -expected[i])
    mean_forward = plain_forward * gains.forward_ratio(active)
    by_k = (np.full(n + 1, mean_forward) if price_rows is None
            else gains.padded_forward(active, np.arange(n + 1), price_rows, mean_forward))
    forward = lambda k: plain_forward if k == 0 else float(by_k[k])  # noqa: E731
    step_overhead = lambda k: overhead(k > 0)  # noqa: E731
    draft_s = [amortised(base_s[i], catch_up_s[i], expected[i], states[i].room) for i in order]
    value = values([expected[i] for i in order], draft_s, forward, step_overhead, active)
    k = pick(value)
    tokens = active + sum(expected[i] - 1.0 for i in order[:k])
    seconds = tokens / value[k]
    waste = [float("inf")] * n
    first = gains.forward_ratio(active) if first_probe_ratio is None else first_probe_ratio
    probe_forward = plain_forward * gains.probe_ratio(active, first) if k == 0 else forward(min(k + 1, n))
    for i in (i for i in order[k:] if not states[i].blind):  # the probe's seconds beyond its tokens' price
        extra = base_s[i] + catch_up_s[i] + probe_forward - forward(k) + step_overhead(k + 1) - step_overhead(k)
        gain = gains.probe_gain(active, min(expected[i], PROBE_TOKENS))
        waste[i] = seconds + extra - (tokens + gain - 1.0) / value[k]
    return Choice([i in order[:k] for i in range(n)], k, float(seconds), waste, float(value[k] / value[0] - 1.0))


def probe(states: list[SequenceState], choice: Choice, credit: float) -> int | None:
    """The skipped candidate that probes this step: of those whose waste the ``credit`` covers, the one skipped
    longest (None: none)."""
    due = [i for i, w in enumerate(choice.waste) if not choice.drafting[i] and w <= credit]
    return max(due, key=lambda i: states[i].skipped) if due else None


def count_skips(states: list[SequenceState], drafting: list[bool], probing: int | None = None) -> list[bool]:
    """Count each skipped sequence's plain step and mark the one ``probing`` (if any); returns ``drafting``."""
    for i, (s, d) in enumerate(zip(states, drafting)):
        s.probing = i == probing
        if not d:
            s.skipped, s.skipped_steps = s.skipped + 1, s.skipped_steps + 1
    return drafting


def fetch_prompt_states(learning: MethodLearning, warm: bool, extra: float | None) -> bool:
    """Whether a generation's prompt runs with the hidden states its drafter reads, on a backend where they cost
    ``extra`` seconds more (llama.cpp then outputs every prompt row's logits too: a fifth more prefill; None:
    not yet known). A generation without them cannot draft (its states are ``blind``), so they are fetched while
    the budget is warming up or drafting, and while it skips only as a probe: when the probe credit covers the
    extra seconds and the last probe's waste (the extra seconds are then spent from it).

    >>> m = MethodLearning(costs=None, drafting=False, probe_credit=0.05, probe_waste=0.02)
    >>> fetch_prompt_states(m, True, 0.04), fetch_prompt_states(m, True, 0.02), round(m.probe_credit, 3)
    (False, True, 0.03)
    """
    if not warm or learning.drafting:
        return True
    if extra is None or learning.probe_credit < extra + learning.probe_waste:
        return False  # (None: the first generation run without them tells the price)
    learning.probe_credit -= extra
    return True
