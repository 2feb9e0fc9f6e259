"""A ``budget=auto`` budget whose choices are a seeded random pattern, to force the skips and cuts ``auto`` may make.

``budget=auto`` (``budget/auto.py``) decides per step whether a sequence drafts, how deep it asks the drafter to
go (``ctx.max_depth``) and which part of the draft it verifies; whatever it decides, the output must be AR's. The
cost-based choices depend on the machine's timings, so a check cannot steer them; this budget replaces them with
a seeded pattern, the rest (``select``'s pricing on a flat made-up cost, the acceptance it learns) the budget's own:

- each step drafts with probability ``draft_chance``; now and then (``run_chance``, and after a sequence's first
  draft) a run of ``RUN`` steps in a row is skipped, so drafters resume after one skipped step and after many;
- the depth hint is drawn from ``DEPTHS`` (the drafter is told to stop there; the engine cuts deeper drafts);
- with ``drop_chance`` a draft is dropped whole after ``propose`` (the drafter proposed, nothing is verified).

>>> from specbench.budget.draft_or_skip import SequenceState
>>> p, s = SkipPattern(seed=1, draft_chance=0.0), SequenceState()
>>> p.plan([s], 10), p.plan([s], 11), s.skipped_steps
([False], [False], 2)
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np

from specbench.budget.auto import Selection
from specbench.budget.auto_budget import AutoBudget
from specbench.budget.draft_or_skip import SequenceState, count_skips
from specbench.engine.tree import DraftTree

RUN = 5  # skipped steps in a row of a long run
DEPTHS = (1, 2, 3, 8)  # depth hints drawn at each drafted step


def flat_cost(n: Any, context: int | None = None, active: int = 1) -> np.ndarray:
    """A made-up cost almost flat in the rows, so ``select`` keeps most of each draft."""
    return 1.0 + 0.01 * (np.asarray(n, dtype=float) - 1)


class SkipPattern(AutoBudget):
    """The seeded pattern of the module's docstring (``history``: each sequence's choices, by its state)."""

    def __init__(self, seed: int, draft_chance: float = 0.5, run_chance: float = 0.15,
                 drop_chance: float = 0.15, depths: tuple[int, ...] | None = DEPTHS) -> None:
        """``depths`` None: the budget's own depth hints (``AutoBudget.depth_hint``)."""
        super().__init__(flat_cost, seed=seed, calibrate=False)
        self.pattern, self.depths = random.Random(seed), depths
        self.draft_chance, self.run_chance, self.drop_chance = draft_chance, run_chance, drop_chance
        self.history: dict[int, tuple[SequenceState, list[bool], list[int]]] = {}  # id -> (state, choices, run left)
        self.dropped = 0

    def plan(self, states: list[SequenceState], context: int | None, active: int = 1) -> list[bool]:
        out = []
        for s in states:
            _, choices, run = self.history.setdefault(id(s), (s, [], [0]))  # (the state kept: its id stays its own)
            first_draft = choices.count(True) == 1 and choices[-1]
            if run[0] == 0 and self.run_chance and (first_draft or self.pattern.random() < self.run_chance):
                run[0] = RUN
            go = run[0] == 0 and self.pattern.random() < self.draft_chance
            run[0] = max(run[0] - 1, 0)
            choices.append(go)
            out.append(go)
        return count_skips(states, out)

    def depth_hint(self, context: int | None = None, hot: bool = False) -> int:
        if self.depths is None:
            return super().depth_hint(context, hot)
        self._rates, self._hot = {}, hot  # (a new step: ``select`` draws its own rates)
        return self.pattern.choice(self.depths)

    def _drops(self) -> bool:
        drop = self.pattern.random() < self.drop_chance
        self.dropped += drop
        return drop

    def select(self, tree: DraftTree, draft_s: float = 0.0, aux_rows: int = 0, context: int | None = None) -> Selection:
        chosen = super().select(tree, draft_s, aux_rows, context)
        return Selection([], 1.0, chosen.expected_seconds) if self._drops() else chosen

    def select_batch(self, trees: list[DraftTree | None], *args: Any, **kwargs: Any) -> list[list[int]]:
        return [[] if self._drops() else keep for keep in super().select_batch(trees, *args, **kwargs)]

    def resumed_after_skips(self) -> set[int]:
        """How many steps in a row were skipped before a sequence drafted again, over every sequence."""
        gaps = set()
        for _, choices, _ in self.history.values():
            gap = 0
            for go in choices:
                if go and gap:
                    gaps.add(gap)
                gap = 0 if go else gap + 1
        return gaps

    def resumed_after(self) -> int:
        """The most steps in a row skipped before some sequence drafted again (0: never resumed)."""
        return max(self.resumed_after_skips(), default=0)
