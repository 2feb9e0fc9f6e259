"""How far ``budget=auto``'s priced value of a step (expected tokens per second) sits from what such steps measure.

``draft_or_skip.choose`` prices each choice from decayed means: tokens per drafted step, the forward, the
drafter, the overhead. Each part is calibrated on its own (``step_costs.py``), yet the value of the steps it
chooses to draft is biased, because it chooses them: a step drafts when its estimate is high, and estimates that
came out high by chance are picked more often than those that came out low (the winner's curse). On llama.cpp,
rest@auto's hot drafts expected 1.56 tokens and emitted 1.44, and its cold drafts chosen at break-even each lost
2% (GSM8K 0.93x). ``ValueCalibration`` keeps, per kind of step (drafted on its value or plain, the sequences in
it, hot or cold), the decayed sums of what the chosen steps were priced at and what they measured, and scales the
choice's value by measured / priced. Steps with a probe are left out (a probe is priced apart).

The factor starts at 1 and is shrunk towards 1 by ``PRIOR_STEPS`` pseudo-steps, so a few noisy steps cannot swing
a choice, and it is kept within ``FACTOR_BOUNDS``. It learns only from steps that drafted on their value, so a
budget that learned to skip keeps its factor and drafts again when probes raise its expected gain. At 0.8-1.2 the
last sequence of a batch-8 PLD run (priced at 36 tokens/s, measuring 23) kept drafting at the floor.

>>> c = ValueCalibration()
>>> for _ in range(40): c.add(True, 1, False, tokens=1.44, seconds=0.050, priced_tokens=1.56, priced_seconds=0.050)
>>> round(c.factor(True, 1, False), 3), c.factor(False, 1, False), round(c.factor(True, 1, True), 3)  # (hot: all)
(0.934, 1.0, 0.934)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from specbench.engine.step_costs import DecayedMean

VALUE_DECAY = 0.97  # per step of the kind: about 30 steps of memory
PRIOR_STEPS = 4.0  # pseudo-steps at factor 1
FACTOR_BOUNDS = (0.6, 1.5)


@dataclass
class _Sums:
    tokens: DecayedMean = field(default_factory=lambda: DecayedMean(VALUE_DECAY))
    seconds: DecayedMean = field(default_factory=lambda: DecayedMean(VALUE_DECAY))
    priced_tokens: DecayedMean = field(default_factory=lambda: DecayedMean(VALUE_DECAY))
    priced_seconds: DecayedMean = field(default_factory=lambda: DecayedMean(VALUE_DECAY))


class ValueCalibration:
    """Measured over priced value of the steps ``budget=auto`` chose, per (drafted, sequences in the step, hot)."""

    def __init__(self) -> None:
        self.sums: dict[tuple[bool, int, bool], _Sums] = {}

    def add(self, drafted: bool, active: int, hot: bool, tokens: float, seconds: float, priced_tokens: float,
            priced_seconds: float) -> None:
        """One step chosen as ``drafted`` (or plain) emitted ``tokens`` in ``seconds``; it was priced at
        ``priced_tokens`` in ``priced_seconds``."""
        if min(tokens, seconds, priced_tokens, priced_seconds) <= 0:
            return
        for key in ((drafted, active, hot), (drafted, active, None)):
            s = self.sums.setdefault(key, _Sums())
            s.tokens.add(tokens)
            s.seconds.add(seconds)
            s.priced_tokens.add(priced_tokens)
            s.priced_seconds.add(priced_seconds)

    def factor(self, drafted: bool, active: int, hot: bool) -> float:
        """Measured / priced value of such steps, shrunk towards 1 (module docstring); the regime's, else the
        kind's over both regimes, else 1."""
        for key in ((drafted, active, hot), (drafted, active, None)):
            s = self.sums.get(key)
            if s is not None and s.tokens.known:
                raw = (s.tokens.total / s.seconds.total) / (s.priced_tokens.total / s.priced_seconds.total)
                weight = s.tokens.weight
                shrunk = (weight * raw + PRIOR_STEPS) / (weight + PRIOR_STEPS)
                return min(max(shrunk, FACTOR_BOUNDS[0]), FACTOR_BOUNDS[1])
        return 1.0
