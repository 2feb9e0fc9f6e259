"""Names fixed by the benchmark's design: the baseline method, the tasks in report order and their labels.

Every module that needs a task's column label or the Spec-Bench column order reads it here (task
classes included), so the order in ``--tasks all``, in reports and in leaderboards cannot drift apart.

>>> task_label("cnndm"), task_label("my_task")
('CNN/DM', 'my_task')
>>> order_subtasks({"GSM8K", "Zeta", "MT-Bench"})
['MT-Bench', 'GSM8K', 'Zeta']
"""
from __future__ import annotations

from typing import Iterable

BASELINE = "ar"
OVERALL = "Overall"
OVERHEAD_KEY = "overhead"  # a method's artifacts entry for its declared storage / parameter overhead

# (task name, report label) in Spec-Bench's column order; ``nq`` is registered but not in ``--tasks all``
_TASKS = (
    ("mt_bench", "MT-Bench"), ("humaneval", "HumanEval"), ("gsm8k", "GSM8K"), ("cnndm", "CNN/DM"),
    ("nq_rag", "NQ-RAG"), ("wmt", "WMT"), ("nq", "NQ"),
)
ALL_TASKS = tuple(name for name, _ in _TASKS if name != "nq")
TASK_LABELS = dict(_TASKS)
SUBTASK_ORDER = tuple(label for _, label in _TASKS)


# MT-Bench's categories in Spec-Bench's question-file order (per-category tables follow it)
MT_BENCH_CATEGORIES = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")


def order_categories(names: Iterable[str]) -> list[str]:
    """MT-Bench categories in their own order, then unknown ones alphabetically.

    >>> order_categories({"math", "zeta", "writing"})
    ['writing', 'math', 'zeta']
    """
    names = set(names)
    return [c for c in MT_BENCH_CATEGORIES if c in names] + sorted(names - set(MT_BENCH_CATEGORIES))


def task_label(task: str) -> str:
    """The report label of a task (its own name when the task is not one of the built-in ones)."""
    return TASK_LABELS.get(task, task)


def order_subtasks(names: Iterable[str]) -> list[str]:
    """Known labels in Spec-Bench order, then unknown ones alphabetically."""
    names = set(names)
    return [s for s in SUBTASK_ORDER if s in names] + sorted(names - set(SUBTASK_ORDER))
