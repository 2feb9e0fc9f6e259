"""``--tasks jsonl:PATH``: your own prompts, one JSON object a line.

Each line holds ``turns`` (a list of user messages; two or more make a multi-turn question whose later
turns carry the AR baseline's earlier answers, as MT-Bench does) and an ``id``, or Spec-Bench's
``question.jsonl`` fields (``question_id``, ``category``, ``turns``): a file copied from Spec-Bench and
edited works as it is. A ``category`` becomes the question's report column; questions without one
fall under the file's name. An optional ``reference`` (a list of strings) is kept.

    {"id": "greet", "turns": ["Say hello in French."]}
    {"question_id": 81, "category": "writing", "turns": ["Write a haiku.", "Now make it rhyme."]}

Errors name the file and line: a missing file, malformed JSON, a missing ``id``/``turns``, a
duplicate id, an empty file.

Splits as for every task: the last ceil(10%) of the lines are the dev split, the rest eval (the
default); a file of fewer than 10 lines has no dev split (every line is eval).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.api import Question, TaskDataError, register_task_source
from specbench_tasks._jsonl import parse_jsonl, question_turns, read_lines
from specbench_tasks._source_task import SourceTask


def _question_id(where: str, n: int, row: dict[str, Any]) -> str:
    qid = row.get("id", row.get("question_id"))
    if qid is None:
        raise TaskDataError(f"{where}:{n}: missing 'id' (or Spec-Bench's 'question_id')")
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
        raise TaskDataError(f"{where}:{n}: 'id' must be a non-empty string or an integer, got {qid!r}")
    return str(qid)


def _category(where: str, n: int, row: dict[str, Any]) -> str:
    category = row.get("category") or ""
    if not isinstance(category, str):
        raise TaskDataError(f"{where}:{n}: 'category' must be a string, got {category!r}")
    return category


def load_jsonl_questions(path: Path, task: str) -> list[Question]:
    """The file's questions in order; every problem raises a one-line ``TaskDataError``."""
    where = str(path)
    rows = parse_jsonl(where, read_lines(path))
    if not rows:
        raise TaskDataError(f"{where}: no questions (the file is empty)")
    seen: dict[str, int] = {}
    out = []
    for n, row in rows:
        qid = _question_id(where, n, row)
        if qid in seen:
            raise TaskDataError(f"{where}:{n}: duplicate id {qid!r} (first on line {seen[qid]})")
        seen[qid] = n
        ref = row.get("reference") or []
        out.append(Question(qid, task, question_turns(where, n, row), _category(where, n, row),
                            tuple(r for r in ref if isinstance(r, str)) if isinstance(ref, list) else ()))
    return out


@register_task_source("jsonl")
def jsonl_task(spec: str) -> SourceTask:
    """jsonl:PATH  your prompts, one {"id", "turns"} object a line (or Spec-Bench question.jsonl lines)."""
    if not spec.strip():
        raise TaskDataError("--tasks jsonl:PATH needs a path, e.g. jsonl:my_prompts.jsonl")
    path = Path(spec).expanduser()
    return SourceTask(f"jsonl:{spec}", path.stem, load_jsonl_questions(path, f"jsonl:{spec}"))
