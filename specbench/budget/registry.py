"""The draft budgets by name: a label's ``budget=`` value (``config/method_labels.budget_of``: ``default``,
``auto``, a depth K or a registered name) becomes a budget here (``make_budget``, called by the method factory),
and a new budget is one class (``contract.Budget``) and one ``register_budget`` call; the engine never changes.

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
from specbench.budget.names import AUTO, BUDGETS, DEFAULT_BUDGET
from specbench.budget.step_costs import StepCosts

FIXED = "fixed"  # the kind of an integer value K


@dataclass(frozen=True)
class Prices:
    """What a budget may price with: ``cost(n, context)`` (None: a budget that prices nothing), the learning it
    shares with its method's other budgets (None: its own), its draws' seed."""

    cost: Callable[..., Any] | None = None
    shared: MethodLearning | None = None
    seed: int = 0


def shared_prices(cost: Callable[..., Any]) -> Prices:
    """Prices that the budgets of one method on a run's tasks share: the machine's costs are the same on every
    task, and what does not depend on the text is learned once (``draft_or_skip.MethodLearning``)."""
    return Prices(cost, MethodLearning(StepCosts(cost)))


BUDGET_KINDS: dict[str, Callable[[Any, Prices], Budget]] = {}
PRICED_KINDS: set[str] = set()  # the kinds whose budgets price steps with the machine's cost profile


def register_budget(kind: str, priced: bool = False) -> Callable[[Callable[[Any, Prices], Budget]],
                                                                   Callable[[Any, Prices], Budget]]:
    """Register ``factory(value, prices) -> Budget`` under ``kind`` (a label's value; ``fixed`` for a depth K);
    ``priced``: its budgets price steps with ``Prices.cost`` (a run then measures the machine's cost profile)."""
    def add(factory: Callable[[Any, Prices], Budget]) -> Callable[[Any, Prices], Budget]:
        BUDGET_KINDS[kind] = factory
        (PRICED_KINDS.add if priced else PRICED_KINDS.discard)(kind)
        return factory
    return add


def kind_of(value: Any) -> str:
    """The registered kind a label's ``budget=`` value names: ``fixed`` for an int K, else the value itself."""
    return FIXED if isinstance(value, int) and not isinstance(value, bool) else value


def make_budget(value: Any, prices: Prices = Prices()) -> Budget:
    """The budget a label's ``budget=`` value names (an int K: ``FixedDepth(K)``)."""
    kind = kind_of(value)
    if kind not in BUDGET_KINDS:
        raise KeyError(f"no draft budget named {value!r} (known: {', '.join(sorted(BUDGET_KINDS))})")
    return BUDGET_KINDS[kind](value, prices)


def budget_names() -> tuple[str, ...]:
    """The names a label's ``budget=`` accepts besides a depth K: the built-in ones, then every registered kind.

    >>> budget_names()
    ('default', 'auto')
    """
    return tuple(dict.fromkeys(k for k in (*BUDGETS, *BUDGET_KINDS) if k != FIXED))


def needs_prices(value: Any) -> bool:
    """Whether the budget ``value`` names prices steps with the machine's cost profile (``register_budget``)."""
    return kind_of(value) in PRICED_KINDS


register_budget(DEFAULT_BUDGET)(lambda value, prices: WHOLE_DRAFT)
register_budget(FIXED)(lambda value, prices: FixedDepth(value))
register_budget(AUTO, priced=True)(lambda value, prices: AutoBudget(prices.cost, seed=prices.seed,
                                                                   shared=prices.shared))
