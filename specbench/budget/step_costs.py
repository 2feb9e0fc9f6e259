"""What a decode step costs on this machine, learned online from the run's own steps (``budget=auto``).

The cost profile (``specbench/profiling/cost_profile.py``) prices a target forward of ``n`` rows, ``T(n)``,
but it was measured apart from the run: the run's forwards come out 5-20% dearer (wider forwards more), and
a step also pays for things outside the forward. ``StepCosts`` learns, from each step's measured times:

- a **calibration** of ``T``: the ratio measured / profile of the verify forward, per (sequences in the forward,
  row-count bucket ``1, 2-3, 4-7, 8-15, ...``), as decayed sums, so ``forward(n)`` = ``T(n)`` x ratio;
- the step's **overhead** outside draft and verify (emit, feedback, bookkeeping), for drafting and plain steps
  apart, per number of sequences;
- the **drafting seconds** of one sequence, per depth asked of the drafter (``DraftContext.max_depth``) and
  number of sequences, so a skipped draft's price is known before the drafter is called;
- the **catch-up seconds per row** a drafter spends reading the rows it missed beyond the ``CATCH_UP_FREE`` a
  drafted step usually brings (the prompt at a generation's first draft, one row per skipped step): learned from
  the drafts that read more, as their seconds beyond the depth's usual ones per extra row.

Every table is a decayed mean (``DecayedMean``): recent steps weigh more, as the context and the text move on.
A table without data falls back to a coarser one (any bucket, any depth, any batch size) and finally to the
profile alone (ratio 1, no overhead, no drafting time). The one-row forward is the exception that matters: it
prices the plain step every choice is weighed against, and the wide forwards' ratio is not its ratio. On a 2-core
AMD EPYC eagle@auto drafted from its first step and never ran a one-row forward, so its plain step was priced
with the wide forwards' ratio: 53 ms against AR's 38 ms on HumanEval at batch 1, where drafting lost (0.93x, 100%
of steps drafted, predicted 1.20x). So a budget runs plain steps until it has measured ``PLAIN_SEEN`` of them
(``plain_unpriced``; ``budget.DraftBudget.plan``), and one more after every ``PLAIN_REFRESH`` wider forwards,
or after ``PLAIN_REFRESH_NEAR`` when the last choice drafted by a lead under ``NEAR_LEAD``; against the fresh
measurement the stale price keeps a weight of at most ``STALE_WEIGHT``. Why: a price measured once is kept as
long as the budget drafts, and on a shared VM the same forward runs 15-30% slower from one question to the next.
eagle@auto's plain steps on one HumanEval question ran at 50 ms (AR's at 36 ms), and priced so, every later step
drafted, at 0.90x on MT-Bench. hydra@auto learned 41-45 ms so on HumanEval and drafted 98% of MT-Bench's steps
at a predicted 1.0x, measured 0.82-0.96x (AR's steps 36-39 ms); a refresh every 100 steps that kept a tenth of
the stale weight (about 3 observations) moved the price 2 ms. Where drafting leads by a few percent, a price 15%
off flips the choice, so it is measured every 20 drafted steps there (one plain step in 20: at most 0.75% of
time, at a lead under 15%); where it leads by more, every 100.

>>> costs = StepCosts(lambda n, ctx=None: 0.01 * (1 + 0.1 * (n - 1)))
>>> float(costs.forward(1, None))
0.01
>>> costs.observe_forward(1, None, 0.012)  # the run's 1-row forwards take 20% more than the profile says
>>> round(float(costs.forward(1, None)), 4), round(float(costs.forward(16, None)), 4)  # 16 rows: no data, same ratio
(0.012, 0.03)
"""
from __future__ import annotations

from typing import Callable

import numpy as np

COST_DECAY = 0.97  # per observation: about 30 steps of memory (the context grows, the machine drifts)
MAX_ROW_BUCKET = 8  # bucket k holds 2^k .. 2^(k+1) - 1 rows; 256 rows and more share the last
MAX_DEPTH = 16
CATCH_UP_FREE = 8  # rows a drafted step's draft reads anyway (its accepted rows): inside the depth's seconds
PLAIN_SEEN = 3  # one-row forwards a budget measures before it trusts its plain step's price (``plain_unpriced``)
PLAIN_REFRESH = 100  # wider forwards after which the plain step's price is stale and measured again
PLAIN_REFRESH_NEAR = 20  # the same where the last choice drafted by a lead under NEAR_LEAD
NEAR_LEAD = 0.15  # a lead within the drift of a shared VM's forward from one question to the next (15-30%)
STALE_WEIGHT = 0.5  # the most weight a stale plain price keeps against the fresh measurement (which weighs 1)


def row_bucket(rows: int) -> int:
    """``floor(log2(rows))`` capped: 1 -> 0, 2-3 -> 1, 4-7 -> 2, ...

    >>> [row_bucket(n) for n in (1, 2, 3, 4, 9, 10**6)]
    [0, 1, 1, 2, 3, 8]
    """
    return min(int(max(rows, 1)).bit_length() - 1, MAX_ROW_BUCKET)


class DecayedMean:
    """A mean whose older observations decay by ``decay`` per new one.

    >>> m = DecayedMean(0.5)
    >>> m.add(1.0); m.add(3.0)
    >>> round(m.mean, 3), m.known
    (2.333, True)
    """

    def __init__(self, decay: float = COST_DECAY) -> None:
        self.decay = decay
        self.total = 0.0
        self.weight = 0.0

    def add(self, value: float, weight: float = 1.0) -> None:
        self.total = self.total * self.decay + value * weight
        self.weight = self.weight * self.decay + weight

    def scale(self, keep: float) -> None:
        """Keep ``keep`` of what was learned: the mean stays, its weight against new observations shrinks."""
        self.total, self.weight = self.total * keep, self.weight * keep

    @property
    def known(self) -> bool:
        return self.weight > 1e-9

    @property
    def mean(self) -> float:
        return self.total / self.weight if self.known else float("nan")


class RatioTable:
    """Decayed measured / predicted ratios keyed by a tuple, with a coarser fallback key (first element only)."""

    def __init__(self) -> None:
        self.measured: dict[tuple, DecayedMean] = {}
        self.predicted: dict[tuple, DecayedMean] = {}

    def add(self, key: tuple, measured: float, predicted: float) -> None:
        for k in (key, key[:1]):
            self.measured.setdefault(k, DecayedMean()).add(measured)
            self.predicted.setdefault(k, DecayedMean()).add(predicted)

    def fade_to(self, key: tuple, weight: float) -> None:
        """Scale what ``key`` (not its coarser key) has learned down to a weight of at most ``weight``: its ratio
        stays, and the next observation outweighs it."""
        m, p = self.measured.get(key), self.predicted.get(key)
        if m is not None and m.weight > weight:
            keep = weight / m.weight
            m.scale(keep)
            p.scale(keep)

    def ratio(self, key: tuple) -> float:
        for k in (key, key[:1]):
            m, p = self.measured.get(k), self.predicted.get(k)
            if m is not None and m.known and p.total > 0:
                return m.total / p.total
        return 1.0


class StepCosts:
    """The calibrated price of a step's parts (see the module docstring).

    ``cost(n, context)``: the profile's seconds of a forward of ``n`` rows after ``context`` cached tokens;
    ``batch_cost(active, rows, context)``: the same for ``active`` sequences padded to ``rows`` rows each
    (default: one forward of ``active * rows`` rows). ``calibrate`` False keeps the profile's T as it is (tests
    that inject a made-up profile, whose seconds the machine's real forwards would otherwise overrule).
    """

    def __init__(self, cost: Callable[..., np.ndarray], batch_cost: Callable[..., np.ndarray] | None = None,
                 calibrate: bool = True) -> None:
        self.cost = cost
        self.batch_cost = batch_cost
        self.calibrate = calibrate
        self._memo: dict[tuple[int, int, int | None], float] = {}  # this step's profile prices (one context at a time)
        self.calibration = RatioTable()
        self.plain_seen: dict[int, int] = {}  # one-row forwards measured, per number of sequences
        self.since_plain: dict[int, int] = {}  # wider forwards since the last one-row forward, per number of sequences
        self.overheads: dict[tuple[bool, int], DecayedMean] = {}
        self.drafting: dict[tuple[int, int], DecayedMean] = {}  # (active, depth) and (0, depth): any batch size
        self.catch_up: dict[int, DecayedMean] = {}  # active and 0: seconds per row read beyond CATCH_UP_FREE
        self.prefill: dict[bool, DecayedMean] = {}  # with the prompt's hidden states or without: seconds per row

    # -- the forward -------------------------------------------------------------------------------------
    def profile(self, rows: int | np.ndarray, context: int | None, active: int = 1) -> np.ndarray:
        """The profile's seconds of the verify forward (uncalibrated). A step prices the same few row counts at
        one context several times (plan, learn): those are remembered until the context moves on, since
        one interpolation of the profile costs about 40 us, 1% of a 40 ms step over the five a step makes."""
        if np.ndim(rows) == 0:
            key = (int(rows), active, context)
            if key not in self._memo:
                if self._memo and next(iter(self._memo))[2] != context:
                    self._memo.clear()
                self._memo[key] = float(self._profile(rows, context, active))
            return np.asarray(self._memo[key])
        return self._profile(rows, context, active)

    def _profile(self, rows: int | np.ndarray, context: int | None, active: int) -> np.ndarray:
        if active <= 1:
            return np.asarray(self.cost(rows, context), dtype=float)
        if self.batch_cost is not None:
            return np.asarray(self.batch_cost(active, rows, context), dtype=float)
        return np.asarray(self.cost(np.asarray(rows) * active, context), dtype=float)

    def forward(self, rows: int | np.ndarray, context: int | None, active: int = 1) -> np.ndarray:
        """The calibrated seconds of the verify forward: the profile's x the run's measured / profile ratio."""
        base = self.profile(rows, context, active)
        if np.ndim(rows) == 0:  # (every step prices a few single row counts: kept cheap)
            return base * self.calibration.ratio((active, row_bucket(int(rows))))
        flat = [int(r) for r in np.ravel(rows)]
        by_rows = {r: self.calibration.ratio((active, row_bucket(r))) for r in set(flat)}  # (each row count once)
        ratios = np.array([by_rows[r] for r in flat])
        return base * ratios.reshape(np.shape(rows))

    def observe_forward(self, rows: int, context: int | None, seconds: float, active: int = 1) -> None:
        predicted = float(self.profile(rows, context, active))
        if self.calibrate and predicted > 0 and seconds > 0:
            if rows == 1 and self.since_plain.get(active, 0) >= PLAIN_REFRESH_NEAR:
                self.calibration.fade_to((active, 0), STALE_WEIGHT)
            self.calibration.add((active, row_bucket(rows)), seconds, predicted)
            if rows == 1:
                self.plain_seen[active], self.since_plain[active] = self.plain_seen.get(active, 0) + 1, 0
            else:
                self.since_plain[active] = self.since_plain.get(active, 0) + 1

    def plain_unpriced(self, active: int = 1, lead: float = float("inf")) -> bool:
        """Whether the plain (one-row) forward of ``active`` sequences is unpriced or stale: fewer than
        ``PLAIN_SEEN`` were measured, or none in the last ``PLAIN_REFRESH`` forwards, or in the last
        ``PLAIN_REFRESH_NEAR`` where the last choice drafted by a ``lead`` (its value over plain's, less 1) under
        ``NEAR_LEAD`` (never, without calibration).

        >>> c = StepCosts(lambda n, ctx=None: 0.01 * n)
        >>> c.plain_unpriced(), [c.observe_forward(1, None, 0.01) for _ in range(PLAIN_SEEN)] and c.plain_unpriced()
        (True, False)
        >>> _ = [c.observe_forward(5, None, 0.05) for _ in range(PLAIN_REFRESH_NEAR)]
        >>> c.plain_unpriced(lead=0.4), c.plain_unpriced(lead=0.05)
        (False, True)
        >>> c.observe_forward(1, None, 0.02); round(float(c.forward(1, None)), 4)  # the fresh 20 ms weighs 2/3
        0.0167
        """
        since = self.since_plain.get(active, 0)
        return self.calibrate and (self.plain_seen.get(active, 0) < PLAIN_SEEN or since >= PLAIN_REFRESH
                                   or (lead < NEAR_LEAD and since >= PLAIN_REFRESH_NEAR))

    # -- outside the forward -----------------------------------------------------------------------------
    def overhead(self, drafted: bool, active: int = 1) -> float:
        """Seconds of a step outside drafting and verifying (0 until a step of the kind was seen)."""
        for key in ((drafted, active), (drafted, 0), (not drafted, active), (not drafted, 0)):
            m = self.overheads.get(key)
            if m is not None and m.known:
                return max(m.mean, 0.0)
        return 0.0

    def observe_overhead(self, drafted: bool, seconds: float, active: int = 1) -> None:
        for key in ((drafted, active), (drafted, 0)):
            self.overheads.setdefault(key, DecayedMean()).add(seconds)

    def draft_seconds(self, depth: int | np.ndarray, active: int = 1) -> float | np.ndarray:
        """One sequence's drafting seconds when asked for ``depth`` tokens (an int or an array): interpolated between
        the known depths (this batch size's, else any), along the last two's slope (if it grows) beyond the deepest,
        and in proportion to the shallowest's below it. So a drafter that pays a forward a depth (EAGLE) is seen to
        draft cheaper shallow, is asked a shallower draft, and that depth's cost is then learned (0 before any draft).

        >>> c = StepCosts(lambda n, ctx=None: n)
        >>> c.observe_draft(6, 0.012); c.observe_draft(2, 0.006)
        >>> [round(float(c.draft_seconds(d)), 4) for d in (1, 4, 9)]
        [0.003, 0.009, 0.0165]
        """
        depth = np.clip(depth, 0, MAX_DEPTH)
        for a in (active, 0):
            known = sorted((d, m.mean) for (k, d), m in self.drafting.items() if k == a and m.known)
            if known:
                xp, fp = zip(*known)
                slope = max(0.0, (fp[-1] - fp[-2]) / (xp[-1] - xp[-2])) if len(xp) > 1 else 0.0
                out = np.interp(depth, xp, fp) + slope * np.maximum(depth - xp[-1], 0)
                out = np.where(depth < xp[0], fp[0] * depth / max(xp[0], 1), out)
                return float(out) if np.ndim(out) == 0 else out
        return 0.0 if np.ndim(depth) == 0 else np.zeros(np.shape(depth))

    def catch_up_seconds(self, rows: int, active: int = 1) -> float:
        """The seconds a drafter spends reading ``rows`` missed rows beyond the depth's usual draft (0 up to
        ``CATCH_UP_FREE`` rows, or before any long catch-up was seen).

        >>> c = StepCosts(lambda n, ctx=None: n)
        >>> c.observe_draft(4, 0.002); c.observe_draft(4, 1.002, catch_up=CATCH_UP_FREE + 1000)
        >>> round(c.catch_up_seconds(CATCH_UP_FREE + 500), 6), c.catch_up_seconds(3)
        (0.5, 0.0)
        """
        extra = rows - CATCH_UP_FREE
        if extra <= 0:
            return 0.0
        for a in (active, 0):
            m = self.catch_up.get(a)
            if m is not None and m.known:
                return max(m.mean, 0.0) * extra
        return 0.0

    def observe_draft(self, depth: int, seconds: float, active: int = 1, catch_up: int = 0) -> None:
        """One sequence's draft asked ``depth`` deep took ``seconds``, reading ``catch_up`` missed rows first."""
        depth = min(max(depth, 0), MAX_DEPTH)
        extra = catch_up - CATCH_UP_FREE
        if extra > 0:  # a long catch-up: its seconds beyond the depth's usual ones, per extra row
            per_row = (seconds - self.draft_seconds(depth, active)) / extra
            for a in (active, 0):
                self.catch_up.setdefault(a, DecayedMean()).add(per_row)
            return
        for a in (active, 0):
            self.drafting.setdefault((a, depth), DecayedMean()).add(seconds)

    # -- a prompt's hidden states (on a backend that pays for them: llama.cpp outputs every row's logits too) -----
    def observe_prefill(self, rows: int, seconds: float, hidden: bool) -> None:
        """A prompt of ``rows`` tokens ran in ``seconds``, with its hidden states or without them."""
        if rows > 0 and seconds > 0:
            self.prefill.setdefault(hidden, DecayedMean()).add(seconds / rows)

    def prompt_states_seconds(self, rows: int) -> float | None:
        """What a prompt of ``rows`` tokens costs more with its hidden states (None: not both kinds seen yet).

        >>> c = StepCosts(lambda n, ctx=None: n)
        >>> c.observe_prefill(100, 0.5, True); c.prompt_states_seconds(200) is None
        True
        >>> c.observe_prefill(300, 1.2, False); round(c.prompt_states_seconds(200), 6)  # (5 - 4) ms a row
        0.2
        """
        with_states, without = self.prefill.get(True), self.prefill.get(False)
        if with_states is None or without is None or not (with_states.known and without.known):
            return None
        return max(with_states.mean - without.mean, 0.0) * rows
