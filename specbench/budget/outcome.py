"""One decode step as its budget learns it (``Budget.learn``): what each sequence of the step did and what the
step cost, one value instead of ten parallel arguments (issue 88). Both loops build it after a step's emit
(``engine/loop.py`` for one sequence, ``engine/batch_loop.py`` for every slot); only ``budget=auto`` reads it.

Example, a single sequence that drafted 3 deep in 2 ms and emitted 3 tokens from a 4-row forward of 30 ms after
100 cached tokens, the whole step 33 ms:

>>> out = StepOutcome(states=[None], drafted=[True], emitted=[3], draft_s=[0.002], depths=[3], padded_rows=4,
...                   context=100, verify_s=0.030, step_s=0.033)
>>> out.active, out.rows_of(0)
(1, 4)
"""
from __future__ import annotations

from dataclasses import dataclass

from specbench.budget.draft_or_skip import SequenceState


@dataclass(frozen=True, kw_only=True)
class StepOutcome:
    """A step of ``len(states)`` sequences (None: one without a drafter, or one its budget plans nothing for):
    sequence i drafted (``drafted[i]``, for ``draft_s[i]`` seconds, asked ``depths[i]`` tokens deep) and emitted
    ``emitted[i]`` tokens; the forward of ``padded_rows`` rows after ``context`` cached tokens took ``verify_s``,
    the whole step ``step_s``; ``rows_each``: each sequence's own rows in it (None: ``padded_rows`` each)."""

    states: list[SequenceState | None]
    drafted: list[bool]
    emitted: list[int]
    draft_s: list[float]
    depths: list[int]
    padded_rows: int
    context: int | None
    verify_s: float
    step_s: float
    rows_each: list[int] | None = None

    @property
    def active(self) -> int:
        """The sequences of the step's forward."""
        return len(self.states)

    def rows_of(self, i: int) -> int:
        """Sequence ``i``'s own rows in the step's forward."""
        return self.padded_rows if self.rows_each is None else self.rows_each[i]
