"""The draft budgets by name: a label's ``budget=`` value (``config/method_labels.budget_of``: ``default``,
``auto`` or a depth K) becomes a budget here (``make_budget``), and a new budget is one class (``contract.Budget``)
and one ``register_budget`` call; the engine never changes.

``Prices``: what a budget may price with, the run's (the machine's cost profile, the learning one method's
budgets share across tasks) and the seed of its draws.

>>> make_budget("default"), make_budget(3)
(WholeDraft(), FixedDepth(3))
>>> make_budget("nope")
Traceback (most recent call last):
...
KeyError: "no draft budget named 'nope' (known: auto, default, fixed)"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from specbench.budget.auto_budget import AutoBudget
from specbench.budget.contract import WHOLE_DRAFT, Budget, FixedDepth
from specbench.budget.draft_or_skip import MethodLearning
from specbench.budget.names import AUTO, DEFAULT_BUDGET

FIXED = "fixed"  # the kind of an integer value K


@dataclass(frozen=True)
class Prices:
    """What a budget may price with: ``cost(n, context)`` (None: a budget that prices nothing), the learning it
    shares with its method's other budgets (None: its own), its draws' seed."""

    cost: Callable[..., Any] | None = None
    shared: MethodLearning | None = None
    seed: int = 0


BUDGET_KINDS: dict[str, Callable[[Any, Prices], Budget]] = {}


def register_budget(kind: str) -> Callable[[Callable[[Any, Prices], Budget]], Callable[[Any, Prices], Budget]]:
    """Register ``factory(value, prices) -> Budget`` under ``kind`` (a label's value; ``fixed`` for a depth K)."""
    def add(factory: Callable[[Any, Prices], Budget]) -> Callable[[Any, Prices], Budget]:
        BUDGET_KINDS[kind] = factory
        return factory
    return add


def make_budget(value: Any, prices: Prices = Prices()) -> Budget:
    """The budget a label's ``budget=`` value names (an int K: ``FixedDepth(K)``)."""
    kind = FIXED if isinstance(value, int) and not isinstance(value, bool) else value
    if kind not in BUDGET_KINDS:
        raise KeyError(f"no draft budget named {value!r} (known: {', '.join(sorted(BUDGET_KINDS))})")
    return BUDGET_KINDS[kind](value, prices)


register_budget(DEFAULT_BUDGET)(lambda value, prices: WHOLE_DRAFT)
register_budget(FIXED)(lambda value, prices: FixedDepth(value))
register_budget(AUTO)(lambda value, prices: AutoBudget(prices.cost, seed=prices.seed, shared=prices.shared))
