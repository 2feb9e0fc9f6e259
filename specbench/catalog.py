"""Names fixed by the benchmark's design: the baseline method, the tasks in report order and their labels.

Every module that needs a task's column label or the Spec-Bench column order reads it here (task
classes included), so the order in ``--tasks all``, in reports and in leaderboards cannot drift apart.

>>> task_label("cnndm"), task_label("my_task")
('CNN/DM', 'my_task')
>>> order_subtasks({"GSM8K", "Zeta", "MT-Bench"})
['MT-Bench', 'GSM8K', 'Zeta']
>>> order_subtasks({"Long-high 1k", "Long-low 8k", "Long-low 1k", "Long-low 1500", "SPEED/coding"})
['Long-low 1k', 'Long-low 1500', 'Long-low 8k', 'Long-high 1k', 'SPEED/coding']
"""
from __future__ import annotations

import re
from typing import Iterable

BASELINE = "ar"
OVERALL = "Overall"
# engines under test (``--engine``): their rows are ``engine:SETTING``, each timed and checked against the same
# engine with speculation off, ``engine:off``, as specbench's own methods are against ``ar``
ENGINE_PREFIX = "engine:"
ENGINE_BASELINE = "engine:off"
OVERHEAD_KEY = "overhead"  # a method's artifacts entry for its declared storage / parameter overhead

# (task name, report label) in Spec-Bench's column order; ``nq`` is registered but not in ``--tasks all``
_TASKS = (
    ("mt_bench", "MT-Bench"), ("humaneval", "HumanEval"), ("gsm8k", "GSM8K"), ("cnndm", "CNN/DM"),
    ("nq_rag", "NQ-RAG"), ("wmt", "WMT"), ("nq", "NQ"),
)
ALL_TASKS = tuple(name for name, _ in _TASKS if name != "nq")
# long-input tasks in SPEED-Bench's entropy tiers (a report column per tier and input length: "Long-low 2k"),
# and SPEED-Bench's qualitative split (a column per category: "SPEED/coding"); none is in ``--tasks all``
LONG_TIERS = (("long_low", "Long-low"), ("long_mixed", "Long-mixed"), ("long_high", "Long-high"))
SPEED_BENCH = ("speed_bench", "SPEED-Bench")
TASK_LABELS = dict(_TASKS + LONG_TIERS + (SPEED_BENCH,))
SUBTASK_ORDER = tuple(label for _, label in _TASKS)
_TIER_ORDER = tuple(label for _, label in LONG_TIERS)


# MT-Bench's categories in Spec-Bench's question-file order (per-category tables follow it)
MT_BENCH_CATEGORIES = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")


def order_categories(names: Iterable[str]) -> list[str]:
    """MT-Bench categories in their own order, then unknown ones alphabetically.

    >>> order_categories({"math", "zeta", "writing"})
    ['writing', 'math', 'zeta']
    """
    names = set(names)
    return [c for c in MT_BENCH_CATEGORIES if c in names] + sorted(names - set(MT_BENCH_CATEGORIES))


def is_engine_row(method: str) -> bool:
    """Whether ``method`` is an engine under test's row (``engine:SETTING``, ``engine:off`` included)."""
    return method.startswith(ENGINE_PREFIX)


def reference_method(method: str) -> str:
    """The baseline a method's row is timed and checked against: ``engine:off`` for an engine's rows, else ``ar``.

    >>> reference_method("engine:ngram"), reference_method("pld"), reference_method("engine:off")
    ('engine:off', 'ar', 'engine:off')
    """
    return ENGINE_BASELINE if is_engine_row(method) else BASELINE


def is_baseline(method: str) -> bool:
    """Whether ``method`` is a baseline (``ar``, or an engine's ``engine:off``)."""
    return method == reference_method(method)


def task_label(task: str) -> str:
    """The report label of a task (its own name when the task is not one of the built-in ones)."""
    return TASK_LABELS.get(task, task)


def _tier_length(name: str) -> tuple[int, int] | None:
    """(tier position, tokens) of a long-input label such as ``Long-mixed 2k``, else None."""
    m = re.fullmatch(r"(\S+) (\d+)(k?)", name)
    if m is None or m.group(1) not in _TIER_ORDER:
        return None
    return _TIER_ORDER.index(m.group(1)), int(m.group(2)) * (1024 if m.group(3) else 1)


def order_subtasks(names: Iterable[str]) -> list[str]:
    """Known labels in Spec-Bench order, then the long-input tiers (low, mixed, high) by input length, then
    the others alphabetically."""
    names = set(names)
    tiers = sorted((n for n in names if _tier_length(n)), key=_tier_length)
    rest = names - set(SUBTASK_ORDER) - set(tiers)
    return [s for s in SUBTASK_ORDER if s in names] + tiers + sorted(rest)
