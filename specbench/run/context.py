"""What a run's helpers read of it (``RunContext``) and its draft budgets (``RunBudgets``): the runner builds them
once the model and the engine are up, and the batched runner, the budgets, the estimate and the manifest take them
instead of the runner itself.

Example: ``ctx.prompt_for(Unit("gsm8k", "12", 1), q)`` -> the turn-1 prompt ids; ``ctx.new_drafter("pld",
"gsm8k")`` -> a fresh drafter, its config and the env its factory filled; ``ctx.budgets.budget_for("pld@k2",
"gsm8k")`` -> ``FixedDepth(2)``, the budget its generations run with (``ctx.new_budget`` builds a fresh one).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from specbench.budget.contract import WHOLE_DRAFT, Budget
from specbench.budget.registry import Prices
from specbench.engine.loop import Engine
from specbench.engine.sampling_config import SamplingConfig
from specbench.models.loading import LoadedModel
from specbench.paths import cache_dir
from specbench.prompts.task import Question
from specbench.results.record import Record, Unit
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_budget, build_drafter
from specbench.run.plan import Plan


@dataclass(frozen=True)
class Row:
    """One generation of a run: its method and unit, the question and the prompt ids it decodes (``job_rows``)."""

    method: str
    unit: Unit
    question: Question
    prompt: list[int]


@dataclass
class RunBudgets:
    """A run's draft budgets (``budgets.build_budgets``): one per (method label, task), built once by the method
    factory; the cost function the priced ones (``budget=auto``) price with (warm-up budgets share it), the
    batched forwards' costs and the cost profile's file (None: no budget of the run is priced)."""

    by_slot: dict[tuple[str, str], Budget] = field(default_factory=dict)
    cost: Any = None
    batch_cost: Any = None
    profile_path: str | None = None

    def budget_for(self, method: str, task: str) -> Budget:
        """What a generation of ``method`` on ``task`` runs with (outside the plan: the whole draft)."""
        return self.by_slot.get((method, task), WHOLE_DRAFT)


@dataclass
class RunContext:
    """One run as its helpers see it: the plan, its folder, the loaded model and the engine, how a unit's prompt is
    built (earlier turns carry AR's answers), the config digest, how a record gets its lossless verdict
    (``checked``), and the budgets."""

    plan: Plan
    run_dir: Path
    loaded: LoadedModel
    engine: Engine
    prompt_for: Callable[[Unit, Question], list[int]]
    longest_context: int
    digest: str
    checked: Callable[[Record, Unit, list[int]], Record]
    budgets: RunBudgets = field(default_factory=RunBudgets)

    @property
    def cfg(self) -> Any:
        """The run's ``RunConfig``."""
        return self.plan.config

    @property
    def sampling(self) -> SamplingConfig:
        return self.plan.config.sampling

    def new_drafter(self, method: str, task: str) -> tuple[Any, dict[str, Any], MethodEnv]:
        """A fresh drafter of ``method`` for ``task`` (None for AR), its config and the env its factory filled."""
        env = MethodEnv.for_task(self.loaded, self.plan.data_dir, cache_dir(), task, self.plan.config.split)
        drafter, cfg = build_drafter(method, self.plan.options_of(method), env)
        return drafter, cfg, env

    def new_budget(self, method: str) -> Budget:
        """A fresh budget of ``method`` (a warm-up's: what it learns never reaches a timed generation), priced with
        the run's costs and learning on its own."""
        return build_budget(method, self.plan.options_of(method), Prices(self.budgets.cost))

    def record(self, gen: Any, row: Row, wall: float, memory: tuple[str, int],
               batch_wall: float | None = None) -> Record:
        """The record of ``gen``, ``row``'s generation (before its lossless verdict, ``checked``): ``wall`` its
        seconds (a batched job's share of ``batch_wall``), ``memory`` its peak ``(kind, bytes)``."""
        task = self.plan.tasks[row.unit.task]
        q = row.question
        return Record.from_generation(gen, method=row.method, unit=row.unit, subtask=task.subtask_for(q),
                                      task_version=task.version, category=q.category, prompt_tokens=len(row.prompt),
                                      wall_time_s=wall, memory=memory, sampling=self.sampling.as_dict(),
                                      config_digest=self.digest, batch_wall_time_s=batch_wall,
                                      context_length=task.context_length)
