"""Building a registered method's drafter from options (CLI ``--method-opt``/YAML) and a ``MethodEnv``, and its
draft budget next to it (``build_budget``, through the budget registry: ``specbench/budget/registry.py``).

Methods are named by labels (``rest``, ``rest@auto``: ``specbench.config.method_labels``); a label's
options fill the method's frozen config dataclass, the generic ``budget`` key aside, which names its budget.

>>> method_config("pld@short", {"num_draft": "4"}).num_draft
4
>>> build_budget("pld@k2", {"budget": "2"}), build_budget("pld", {}), budget_priced("pld@auto", {"budget": "auto"})
(FixedDepth(2), WholeDraft(), True)
"""
from __future__ import annotations

import dataclasses
from typing import Any

from specbench.config.coerce import from_dict
from specbench.config.method_labels import BUDGET_KEY, budget_of, split_label
from specbench.budget.contract import Budget
from specbench.budget.names import DEFAULT_BUDGET
from specbench.budget.registry import Prices, make_budget, needs_prices
from specbench.engine.drafter import Drafter
from specbench.plugins.registry import METHODS
from specbench.run.method_env import MethodEnv


def method_config(name: str, options: dict[str, Any] | None = None) -> Any:
    """The frozen config dataclass of method (or label) ``name`` filled from ``options`` (unknown keys raise;
    the generic ``budget`` key is checked by ``budget_of``, not passed on)."""
    base, _ = split_label(name)
    spec = METHODS.get(base)
    budget_of(name, options)
    opts = {k: v for k, v in (options or {}).items() if k != BUDGET_KEY}
    return from_dict(spec.config_cls, opts, where=f"{name}.")


def build_drafter(name: str, options: dict[str, Any] | None, env: MethodEnv) -> tuple[Drafter | None, dict[str, Any]]:
    """Return (drafter or None for AR, config as a dict for the manifest, ``budget`` included unless default:
    ``auto`` or the fixed depth K as an int)."""
    config = method_config(name, options)
    drafter = METHODS.get(split_label(name)[0]).factory(config, env)
    if drafter is not None and not isinstance(drafter, Drafter):  # (its capabilities are read, never probed)
        raise TypeError(f"method {name!r} built a {type(drafter).__name__}, which does not declare the drafter "
                        f"contract: build it on specbench.api.BaseDrafter")
    out = dataclasses.asdict(config)
    budget = budget_of(name, options)
    if budget != DEFAULT_BUDGET:
        out[BUDGET_KEY] = budget
    return drafter, out


def build_budget(name: str, options: dict[str, Any] | None, prices: Prices = Prices()) -> Budget:
    """The draft budget of method (or label) ``name`` with ``options``: the one its ``budget`` value names
    (``budget_of``), priced with ``prices`` (a budget that needs them: ``budget_priced``)."""
    return make_budget(budget_of(name, options), prices)


def budget_priced(name: str, options: dict[str, Any] | None) -> bool:
    """Whether the budget of ``name`` prices its steps with the machine's cost profile (``budget=auto``): the run
    measures (or reads) the profile only then."""
    return needs_prices(budget_of(name, options))
