"""A task whose questions come from the user's own source (``jsonl:PATH``, ``hf:DATASET...``).

Its name is the whole ``--tasks`` entry, its version a hash of the questions it loaded (ids, turns,
categories, references): a changed file gives a new version, which the run's config digest carries,
so a run folder is never resumed on different prompts. A question's ``category``, when it has one, is
its report column; the others fall under the source's label.

>>> t = SourceTask("jsonl:my/q.jsonl", "q", [Question("1", "jsonl:my/q.jsonl", ("Hi",), "chat")])
>>> t.slug, t.version, t.subtask_for(t.questions[0])
('jsonl-q', '6e8acb44f938', 'chat')
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from specbench.api import Question, Task, TaskDataError


def questions_hash(questions: list[Question]) -> str:
    """12 hex digits of the sha256 of the questions' content, in order."""
    data = [[q.question_id, list(q.turns), q.category, list(q.reference)] for q in questions]
    return hashlib.sha256(json.dumps(data, ensure_ascii=False).encode("utf-8")).hexdigest()[:12]


class SourceTask(Task):
    """Questions already loaded from a user's file or dataset; ``label`` names their report column."""

    def __init__(self, name: str, label: str, questions: list[Question]) -> None:
        if not questions:
            raise TaskDataError(f"task {name}: no questions (the source is empty)")
        self.name = name  # type: ignore[misc]  # per instance: one class serves every file
        self.subtask = label  # type: ignore[misc]
        self.version = questions_hash(questions)  # type: ignore[misc]
        self.questions = questions

    @property
    def slug(self) -> str:
        prefix = self.name.partition(":")[0]
        return f"{prefix}-" + re.sub(r"[^A-Za-z0-9_.]+", "_", self.subtask).strip("_")

    def load(self, data_dir: Path | None) -> list[Question]:
        return list(self.questions)

    def subtask_for(self, question: Question) -> str:
        return question.category or self.subtask
