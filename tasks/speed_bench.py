"""``speed_bench``: SPEED-Bench's qualitative split (NVIDIA, 2026), 880 prompts in 11 categories, each category
a report column (``SPEED/coding`` ... ``SPEED/writing``).

The dataset (``nvidia/SPEED-Bench`` on the Hugging Face Hub, config ``qualitative``, split ``test``) has the
columns ``question_id`` (str), ``category`` (str), ``sub_category`` (str), ``turns`` (list of str: one or more
user turns), ``source`` and ``src_id`` (where the prompt came from), ``difficulty`` (str) and ``multiturn``
(bool). Read through the ``hf:`` machinery (``tasks/hf_dataset.py``), never downloaded unless asked:

- ``--tasks speed_bench``: ``<data dir>/speed_bench``, a folder written by ``save_to_disk`` (the
  ``DatasetDict`` with its ``test`` split, or that split alone); without it, a one-line error saying how to
  make it;
- ``--tasks speed_bench:SOURCE``: SOURCE a ``save_to_disk`` folder, or a hub id: ``speed_bench:nvidia/SPEED-Bench``
  downloads the split with ``datasets`` (the dataset's licence applies; it may ask you to log in).

Rows whose prompt the dataset does not ship (their first turn is NVIDIA's placeholder "FULL BENCHMARK DATA
SHOULD BE FETCHED FROM THE SOURCE ..."; SPEED-Bench's own preparation script fills them from their source
datasets) are skipped, with a line on stderr counting them per category; fill them and ``save_to_disk``
the result to run them too. Multi-turn rows run every turn, later turns prompted with the AR baseline's
answers as everywhere in specbench.

Order: the categories take turns (coding, humanities, ... writing, then the second of each, ...), rows of a
category in dataset order, so ``--limit 11`` holds one prompt of each category. Dev split (``--split dev``):
the last ceil(10%) of that order (of all 880: the last 8 of each category); eval: the rest.

Version: a hash of the questions loaded (as ``jsonl:``/``hf:`` tasks): another copy of the data, or the
placeholders filled, gives a new version and a new run folder.

>>> [q.question_id for q in interleave({"b": [Question("b1", "t", ("x",))], "a": [Question("a1", "t", ("y",)),
...     Question("a2", "t", ("z",))]})]
['a1', 'b1', 'a2']
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

from specbench.api import Question, Task, TaskDataError, register_task, register_task_source
from specbench_tasks._source_task import questions_hash
from specbench_tasks.hf_dataset import HFSpec, is_saved_dataset, load_split

HUB_ID, CONFIG, SPLIT = "nvidia/SPEED-Bench", "qualitative", "test"
CATEGORIES = ("coding", "humanities", "math", "multilingual", "qa", "rag", "reasoning", "roleplay", "stem",
              "summarization", "writing")
COLUMNS = ("question_id", "category", "turns")  # the ones read (the others describe where a prompt came from)
PLACEHOLDER = "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE"
FOLDER = "speed_bench"
HOW_TO = (f"save it there with: python -c \"import datasets; datasets.load_dataset('{HUB_ID}', '{CONFIG}')"
          f".save_to_disk('DATA_DIR/{FOLDER}')\", or run --tasks speed_bench:{HUB_ID} (downloads it)")


def load_source(source: str) -> Any:
    """The qualitative split from a ``save_to_disk`` folder or a hub id (``datasets``, ``hf:`` machinery)."""
    local = Path(source).expanduser()
    if is_saved_dataset(local):
        return load_split(HFSpec(str(local), None, SPLIT, "turns"))
    return load_split(HFSpec(source, CONFIG, SPLIT, "turns"))


def interleave(by_category: dict[str, list[Question]]) -> list[Question]:
    """Round-robin over the categories (SPEED-Bench's order, then any other alphabetically)."""
    names = [c for c in CATEGORIES if c in by_category] + sorted(set(by_category) - set(CATEGORIES))
    out, depth = [], max((len(v) for v in by_category.values()), default=0)
    for i in range(depth):
        out += [by_category[c][i] for c in names if i < len(by_category[c])]
    return out


def _turns(where: str, value: Any) -> tuple[str, ...] | None:
    """The row's user turns; None for a placeholder row; a malformed value is a ``TaskDataError``."""
    if not isinstance(value, list) or not value or not all(isinstance(t, str) and t.strip() for t in value):
        raise TaskDataError(f"{where}: 'turns' must be a non-empty list of non-empty strings, got {value!r:.60}")
    return None if value[0].lstrip().startswith(PLACEHOLDER) else tuple(value)


def speed_bench_questions(ds: Any, task: str, where: str) -> list[Question]:
    """The usable rows of the split as questions, categories interleaved; placeholder rows counted on stderr."""
    missing = [c for c in COLUMNS if c not in ds.column_names]
    if missing:
        raise TaskDataError(f"{where}: not SPEED-Bench's schema: no column(s) {', '.join(missing)} "
                            f"(has: {', '.join(ds.column_names)})")
    by_category: dict[str, list[Question]] = {}
    skipped: Counter[str] = Counter()
    seen: set[str] = set()
    for i, row in enumerate(ds):
        qid, category = str(row["question_id"]), str(row["category"] or "").strip()
        if not category:
            raise TaskDataError(f"{where} row {i}: empty category")
        if qid in seen:
            raise TaskDataError(f"{where} row {i}: duplicate question_id {qid!r}")
        seen.add(qid)
        turns = _turns(f"{where} row {i}", row["turns"])
        if turns is None:
            skipped[category] += 1
            continue
        by_category.setdefault(category, []).append(Question(qid, task, turns, category=category))
    if skipped:
        counts = ", ".join(f"{c} {n}" for c, n in sorted(skipped.items()))
        print(f"[specbench] {task}: skipped {sum(skipped.values())} row(s) whose prompt the dataset does not ship "
              f"(placeholders: {counts}); fill them with SPEED-Bench's preparation script and save_to_disk the "
              "result to run them", file=sys.stderr)
    questions = interleave(by_category)
    if not questions:
        raise TaskDataError(f"{where}: no usable rows (every prompt is a placeholder)")
    return questions


@register_task("speed_bench")
class SpeedBenchTask(Task):
    """SPEED-Bench's qualitative split from the data dir (``speed_bench:SOURCE``: another copy, or the hub)."""

    content_versioned = True

    def __init__(self, source: str | None = None) -> None:
        self.source = source
        if source is not None:
            self.name = f"speed_bench:{source}"  # type: ignore[misc]  # per instance: one per source

    @property
    def slug(self) -> str:
        return "speed_bench" if self.source is None else f"speed_bench-{Path(self.source).name or 'src'}"

    def load(self, data_dir: Path | None) -> list[Question]:
        if self.source is not None:
            ds, where = load_source(self.source), self.name
        else:
            folder = data_dir / FOLDER if data_dir is not None else None
            if folder is None or not is_saved_dataset(folder):
                raise TaskDataError(f"SPEED-Bench's qualitative split not found at {folder or f'<data dir>/{FOLDER}'}; "
                                    + HOW_TO)
            ds, where = load_source(str(folder)), str(folder)
        questions = speed_bench_questions(ds, self.name, where)
        self.version = questions_hash(questions)  # type: ignore[misc]
        return questions

    def subtask_for(self, question: Question) -> str:
        return f"SPEED/{question.category}"


@register_task_source("speed_bench")
def speed_bench_source(source: str) -> SpeedBenchTask:
    """speed_bench:SOURCE  SPEED-Bench's qualitative split from a save_to_disk folder or a hub id (downloads)."""
    if not source.strip():
        raise TaskDataError(f"--tasks speed_bench:SOURCE needs a folder or a hub id, e.g. speed_bench:{HUB_ID}")
    return SpeedBenchTask(source.strip())
