"""``budget=auto`` behind the budget's contract (``contract.py``): ``DraftBudget``'s choices (``auto.py``) as the
decode loops ask for them.

Example: a sequence the budget plans for (``sequence``), asked no deeper than the room left: with 3 tokens left the
drafter is asked at most 2 deep, whatever depth would pay.

>>> import numpy as np
>>> budget = AutoBudget(lambda n, context=None: 0.040 + 0.001 * (np.asarray(n) - 1), calibrate=False)
>>> budget.sequence() is not None, budget.room(3), budget.depth(3, 100, False) <= 2
(True, 3, True)
"""
from __future__ import annotations

from typing import Any, Callable

from specbench.budget.acceptance_stats import is_hot
from specbench.budget.auto import DraftBudget
from specbench.budget.draft_or_skip import SequenceState
from specbench.tree.draft_tree import DraftTree


class AutoBudget(DraftBudget):
    """``DraftBudget`` answering the contract: one per (method, task) of a run, state kept across generations."""

    keeps_state_across_generations = True  # (its acceptance counts, costs and random draws)

    def sequence(self) -> SequenceState | None:
        return SequenceState()

    def learn_prefill(self, rows: int, seconds: float, hidden: bool) -> None:
        self.costs.observe_prefill(rows, seconds, hidden)

    def price_batches(self, batch_cost: Callable[..., Any]) -> None:
        # a padded batched forward: batch_cost(active slots, rows each, context), calibrated by the budget
        self.costs.batch_cost = batch_cost

    def room(self, room: int) -> int:
        return room

    def depth(self, room: int, context: int, hot: bool) -> int:
        return min(room - 1, self.depth_hint(context, hot))

    def keep(self, tree: DraftTree, draft_s: float, aux_rows: int, context: int) -> list[int] | None:
        return self.select(tree, draft_s, aux_rows, context).keep

    def keep_batch(self, trees: list[DraftTree | None], aux_rows: list[int], context: int | None, draft_s: float,
                   probing: list[bool]) -> list[list[int]] | None:
        active = len(trees)
        return self.select_batch(trees, aux_rows, lambda m, ctx: self.costs.forward(m, ctx, active), context,
                                 draft_s, probing)

    def observe(self, tree: DraftTree | None, accepted: list[int], hot: bool = False) -> bool:
        super().observe(tree, accepted, hot)
        return is_hot(tree, accepted)
