"""A run's draft budgets: one per (method label, task), built once by the method factory from the label and its
options (``methods_factory.build_budget``, through the budget registry). A budget that prices its steps
(``budget=auto``) gets this machine's cost profile (and, at batch sizes above 1, its batched forwards' costs), both
kept in the run folder so a resumed run prices drafts with the numbers its first part used; those of one method
share what does not depend on the text (``MethodLearning``: step costs, probe credit, gains for a task not yet
warm). The others (``WholeDraft``, ``FixedDepth(K)``) have no state.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from specbench.budget.registry import Prices, shared_prices
from specbench.engine.backends.contract import PadsRows
from specbench.files.jsonfile import save_json
from specbench.paths import cache_dir
from specbench.profiling.batch_profile import batch_cost_function, cached_batch_costs, load_batch_costs
from specbench.profiling.cost_profile import CONTEXTS, cached_cost_profile, cost_function
from specbench.profiling.profile import load_profile, save_profile
from specbench.results.run_folder import BATCH_PROFILE_FILE, PROFILE_FILE
from specbench.run.context import RunBudgets, RunContext
from specbench.run.methods_factory import budget_priced, build_budget


def build_budgets(ctx: RunContext) -> RunBudgets:
    """The budgets of ``ctx``'s run, one per (method label, task) from the label's options: a priced one
    (``budget=auto``) learns over that method's generations on that task, priced with the machine's cost profile
    measured once (cached) and copied into the run folder (validated by the load: a damaged cached profile never
    reaches the run folder)."""
    plan = ctx.plan
    priced = [m for m in plan.methods if budget_priced(m, plan.options_of(m))]
    if not priced:
        return RunBudgets({(m, t): build_budget(m, plan.options_of(m)) for m in plan.methods for t in plan.tasks})
    kept = ctx.run_dir / PROFILE_FILE
    if kept.is_file():  # a resumed run keeps pricing drafts with the profile its first part used
        profile, path = load_profile(kept), kept
    else:
        profile, path = cached_cost_profile(ctx.loaded, ctx.engine.backend, cache_dir(), longest=ctx.longest_context)
        save_profile(profile, kept)
    cost = padded_cost(cost_function(profile), ctx.engine.backend)
    prices = {m: shared_prices(cost) for m in priced}  # (one method's budgets share what the text does not change)
    budgets = {(m, t): build_budget(m, plan.options_of(m), prices.get(m, Prices()))
               for m in plan.methods for t in plan.tasks}
    return RunBudgets(budgets, cost, _batch_costs(ctx, Path(path), cost), str(path))


def padded_cost(cost: Any, backend: Any) -> Any:
    """``cost`` priced at the rows a step pays for on ``backend``: a backend that pads its forwards
    (``contract.PadsRows``: the compiled one's row buckets) costs ``T(16)`` for 9 rows; any other, ``cost`` itself.

    >>> from types import SimpleNamespace
    >>> padded = padded_cost(lambda n, context=None: n * 1.0, SimpleNamespace(padded_rows=lambda n: 16 if n > 8 else n))
    >>> padded(9), padded(4), padded(np.array([1, 9])).tolist()
    (16.0, 4.0, [1.0, 16.0])
    """
    if not isinstance(backend, PadsRows):
        return cost
    pad = np.vectorize(lambda n: backend.padded_rows(int(np.ceil(n))), otypes=[float])

    def at(n: Any, context: Any = None) -> Any:
        return cost(backend.padded_rows(int(np.ceil(n))) if np.ndim(n) == 0 else pad(n), context)

    return at


def _batch_costs(ctx: RunContext, profile_path: Path, cost: Any) -> Any:
    """T_A(m) of the run's batch sizes above 1 (``batch_profile.py``), kept in the run folder like the profile."""
    sizes = [b for b in ctx.cfg.batch_size if b > 1]
    if not sizes:
        return None
    kept = ctx.run_dir / BATCH_PROFILE_FILE
    if kept.is_file():
        data = load_batch_costs(kept)
    else:
        data = cached_batch_costs(ctx.loaded, ctx.engine.backend.name, profile_path, sizes, CONTEXTS)
        save_json(data, kept)
    return batch_cost_function(data, cost)
