"""The batched work of a run (``--batch-size``): which generations run together, in what order.

Batch size 1 is the plan's ordinary work (``Plan.jobs``), and it always runs first: AR alone is the
lossless reference of every batch size and gives later turns their prompts. Each size above 1 then
runs, per task, groups of that many questions (static batching: the task's questions in plan order,
cut into groups) or, with ``--refill``, all the task's questions as one queue. Within a group, for each
turn and repeat, every method decodes the group together (AR first), so the machine's drift hits all
methods of a group alike, and a method's speedup at size B is its throughput over AR's at size B on
the same questions.

Example: 5 GSM8K questions at ``--batch-size 1,2``: size 1 as usual, then groups [q1, q2], [q3, q4],
[q5]; for each group AR decodes it together, then each method.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from specbench.catalog import BASELINE
from specbench.prompts.task import Question
from specbench.results.record import Unit


@dataclass(frozen=True)
class BatchJob:
    """One batched generation: ``method`` decodes ``units`` (one task, one turn) ``size`` at a time."""

    method: str
    size: int
    refill: bool
    units: tuple[Unit, ...]
    questions: tuple[Question, ...]

    @property
    def slot(self) -> tuple[str, str, int]:
        """Its drafters' pool (``batch_runner.py``): one per (method, task, batch size)."""
        return (self.method, self.units[0].task, self.size)

    @property
    def width(self) -> int:
        """The sequences decoding at once: its size, or fewer when the group is smaller."""
        return min(self.size, len(self.units))


def single_methods(plan: Any) -> list[str]:
    """The methods timed alone (batch size 1): all of them when 1 is among the sizes, else AR only."""
    return list(plan.methods) if 1 in plan.config.batch_size else [BASELINE]


def batch_jobs(plan: Any) -> Iterator[BatchJob]:
    """Every batched generation of ``plan`` above batch size 1, in the order the runner times them."""
    cfg = plan.config
    for size in (b for b in cfg.batch_size if b > 1):
        for task, qs in plan.questions.items():
            groups = [qs] if cfg.refill else [qs[i : i + size] for i in range(0, len(qs), size)]
            for group in groups:
                for turn in range(1, max((len(q.turns) for q in group), default=0) + 1):
                    members = tuple(q for q in group if len(q.turns) >= turn)
                    for rep in range(cfg.repeats):
                        units = tuple(Unit(task, q.question_id, turn, rep, size) for q in members)
                        for method in plan.methods:
                            yield BatchJob(method, size, cfg.refill, units, members)
