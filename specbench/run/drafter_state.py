"""What a drafter carries from one generation to the next, and how the runner keeps it to timed work.

A drafter may learn across generations (SuffixDecoding's tree of earlier answers, Token Recycling's
matrix). The runner gives it only what an uninterrupted run would: warm-up runs on separate instances
(``Runner._warm_up``), ``learn`` sees each timed generation's finished output of the drafter's own
(method, task), and a resumed run ``replay``s the finished records in plan order before it goes on.

Example: plan order q1, q2, q3 for ``suffix`` on gsm8k, interrupted after q2. The uninterrupted run's
drafter learned q1's then q2's output before q3; the resumed run's fresh drafter is replayed q1, q2 from
the records, so q3 is drafted from the same state (for a drafter whose state comes only from ``learn``).
"""
from __future__ import annotations

from typing import Any, Callable

from specbench.prompts.task import Question
from specbench.results.record import Unit


def learn(drafter: Any, prompt_ids: list[int], output_ids: list[int]) -> None:
    """Hand a finished generation to a drafter that learns across generations (``BaseDrafter.learn``);
    nothing for AR (no drafter) or a drafter without the hook."""
    hook = getattr(drafter, "learn", None)
    if hook is not None:
        hook(list(prompt_ids), list(output_ids))


def replay(drafters: dict[tuple[str, str], Any], jobs: list[tuple[Unit, Question, str]], records: dict,
           prompt_for: Callable[[Unit, Question], list[int]]) -> None:
    """Each drafter learns its (method, task)'s finished records (``records``: ``(method, unit) -> Record``),
    in plan order, the order an uninterrupted run learned them in."""
    for unit, q, method in jobs:
        rec = records.get((method, unit))
        if rec is not None:
            learn(drafters[(method, unit.task)], prompt_for(unit, q), rec.output_ids)


def first_pending(todo: list[tuple[Unit, Question, str]]) -> dict[str, Question]:
    """task -> its first question left to run (the warm-up prompt), in the order the tasks come."""
    first: dict[str, Question] = {}
    for unit, q, _method in todo:
        first.setdefault(unit.task, q)
    return first
