"""``budget=auto``'s state for a run: one ``DraftBudget`` per (auto method, task), those of one method sharing
what does not depend on the text (``MethodLearning``: step costs, probe credit, gains for a task not yet warm),
priced with this machine's cost profile (and, at batch sizes above 1, its batched forwards' costs), both kept in
the run folder so a resumed run prices drafts with the numbers its first part used. A fixed budget (``budget=K``) has no state:
only its depth K, which the engine cuts every draft to (``fixed_depths``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.config.method_labels import BUDGET_KEY
from specbench.budget.auto_budget import AutoBudget
from specbench.budget.names import AUTO
from specbench.budget.draft_or_skip import MethodLearning
from specbench.budget.step_costs import StepCosts
from specbench.files.jsonfile import save_json
from specbench.paths import cache_dir
from specbench.profiling.batch_profile import batch_cost_function, cached_batch_costs, load_batch_costs
from specbench.profiling.cost_profile import CONTEXTS, cached_cost_profile, cost_function
from specbench.profiling.profile import load_profile, save_profile
from specbench.results.run_folder import BATCH_PROFILE_FILE, PROFILE_FILE
from specbench.run.context import RunBudgets, RunContext


def build_budgets(ctx: RunContext, configs: dict[str, Any]) -> RunBudgets:
    """The budgets of ``ctx``'s run (``configs``: each method label's config): a budget per (auto method, task), its
    acceptance learned over that method's generations on that task, priced with the machine's cost profile
    measured once (cached) and copied into the run folder (validated by the load: a damaged cached profile never
    reaches the run folder); and each fixed budget's depth."""
    auto = [m for m in ctx.plan.methods if configs[m].get(BUDGET_KEY) == AUTO]
    if not auto:
        return RunBudgets(fixed_depths=fixed_depths(configs))
    kept = ctx.run_dir / PROFILE_FILE
    if kept.is_file():  # a resumed run keeps pricing drafts with the profile its first part used
        profile, path = load_profile(kept), kept
    else:
        profile, path = cached_cost_profile(ctx.loaded, ctx.engine.backend, cache_dir(), longest=ctx.longest_context)
        save_profile(profile, kept)
    cost = cost_function(profile)
    shared = {m: MethodLearning(StepCosts(cost)) for m in auto}  # the machine's costs are the same on every task
    budgets = {(m, t): AutoBudget(cost, shared=shared[m]) for m in auto for t in ctx.plan.tasks}
    return RunBudgets(budgets, cost, _batch_costs(ctx, Path(path), cost), str(path), fixed_depths(configs))


def fixed_depths(configs: dict[str, Any]) -> dict[str, int]:
    """The depth K of each method label run with a fixed budget, from the run's method configs
    (``methods_factory.build_drafter`` records ``budget`` there: ``auto``, or K as an int).

    >>> fixed_depths({"ar": {}, "pld": {"budget": 2}, "pld@auto": {"budget": "auto"}})
    {'pld': 2}
    """
    return {m: c[BUDGET_KEY] for m, c in configs.items() if isinstance(c.get(BUDGET_KEY), int)}


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
