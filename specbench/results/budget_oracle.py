"""The oracle ``budget=auto`` is measured against: the best fixed draft budget in hindsight (issue 46).

A sweep whose grid has a ``budget`` axis holding ``auto`` and at least one fixed budget (``default``, the
method's whole draft, or a depth ``K``) ran every budget on the same questions. The fixed point with the
highest Overall speedup is the budget one would have fixed, had one known the results beforehand; AR itself
is a fixed choice too ("never draft", 1.00x by definition), so when every drafting budget is slower than AR
the oracle is AR. Auto's speedup as a fraction of the oracle's says how much of the hindsight-best choice
auto finds online, without knowing the questions; above 100% it beat every fixed budget (it chooses per step).
With other axes in the grid, each combination of their values gets its own oracle, in grid order.

Example: ``--grid pld.budget=1,4,default,auto`` measuring 1.20x, 1.48x, 1.31x and 1.42x: the oracle is
``budget=4`` and auto reaches 1.42 / 1.48 = 96% of it.

>>> from specbench.results.sweep import PointResult, SweepPoint
>>> class Overall:  # (a stand-in for the points' ``stats.Cell``: only its speedup is read)
...     def __init__(self, speedup): self.speedup = speedup
>>> points = [PointResult(SweepPoint((("budget", v),)), Overall(s))
...           for v, s in (("1", 1.20), ("4", 1.48), ("default", 1.31), ("auto", 1.42))]
>>> oracle_lines(points)
['auto: 1.42x = 96% of the best fixed budget (budget=4, 1.48x)']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.config.method_labels import BUDGET_KEY
from specbench.budget.names import AUTO

PointResult = Any  # ``sweep.PointResult`` (``sweep.py`` imports this module to fill ``sweep.json``: no import back)

NEVER_DRAFT = "ar: never draft"  # the oracle when no drafting budget beats AR
AR_SPEEDUP = 1.0


@dataclass(frozen=True)
class BudgetOracle:
    """Auto's speedup and the best fixed budget's, at one combination of the grid's other axes (``others``)."""

    others: tuple[tuple[str, str], ...]
    auto_speedup: float | None  # None: auto's point has no Overall speedup (no paired AR data)
    best_label: str  # ``budget=4``, ``budget=default`` or ``NEVER_DRAFT``
    best_speedup: float

    @property
    def fraction(self) -> float | None:
        return None if self.auto_speedup is None else self.auto_speedup / self.best_speedup

    @property
    def line(self) -> str:
        """``auto: 1.42x = 96% of the best fixed budget (budget=4, 1.48x)``, prefixed by the other axes' values."""
        best = f"the best fixed budget ({self.best_label}, {self.best_speedup:.2f}x)"
        text = (f"auto: no Overall speedup (no paired AR data) vs {best}" if self.fraction is None else
                f"auto: {self.auto_speedup:.2f}x = {self.fraction:.0%} of {best}")
        prefix = ",".join(f"{k}={v}" for k, v in self.others)
        return f"{prefix}: {text}" if prefix else text


def budget_oracles(results: list[PointResult]) -> list[BudgetOracle]:
    """One oracle per combination of the other axes whose points hold ``budget=auto`` and a fixed budget
    (none when the grid has no ``budget`` axis). Ties go to AR, then to the first fixed point in grid order."""
    groups: dict[tuple[tuple[str, str], ...], dict[str, PointResult]] = {}
    for r in results:
        options = dict(r.point.options)
        if BUDGET_KEY in options:
            others = tuple((k, v) for k, v in r.point.options if k != BUDGET_KEY)
            groups.setdefault(others, {})[options[BUDGET_KEY]] = r
    oracles = []
    for others, by_budget in groups.items():
        fixed = [(f"{BUDGET_KEY}={v}", r.speedup) for v, r in by_budget.items() if v != AUTO]
        if AUTO not in by_budget or not fixed:
            continue
        best_label, best_speedup = NEVER_DRAFT, AR_SPEEDUP
        for label, speedup in fixed:
            if speedup is not None and speedup > best_speedup:
                best_label, best_speedup = label, speedup
        oracles.append(BudgetOracle(others, by_budget[AUTO].speedup, best_label, best_speedup))
    return oracles


def oracle_lines(results: list[PointResult]) -> list[str]:
    """The oracles' lines, as the sweep prints them and ``sweep.md`` lists them."""
    return [o.line for o in budget_oracles(results)]


def oracle_summary(results: list[PointResult]) -> list[dict[str, Any]] | None:
    """``sweep.json``'s ``budget_oracle``: one entry per oracle, or None when the grid has none."""
    oracles = budget_oracles(results)
    if not oracles:
        return None
    return [{"other_options": dict(o.others), "auto_speedup": o.auto_speedup, "best_fixed": o.best_label,
             "best_fixed_speedup": o.best_speedup, "fraction_of_best": o.fraction} for o in oracles]
