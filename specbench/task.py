"""The task interface: a loader of ``Question``s plus how they become chat prompts."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar


class TaskDataError(ValueError):
    """A task's data file is missing or malformed (one-line message for the CLI)."""


@dataclass(frozen=True)
class Question:
    """One benchmark question: user turns (MT-Bench has two) and an optional reference answer."""

    question_id: str
    task: str
    turns: tuple[str, ...]
    category: str = ""
    reference: tuple[str, ...] = field(default_factory=tuple)


class Task:
    """Base class for registered tasks. ``version`` changes whenever prompts or data change."""

    name: ClassVar[str] = ""
    subtask: ClassVar[str] = ""  # column label in reports; default: specbench.catalog.task_label(name)
    version: ClassVar[str] = "1"

    def load(self, data_dir: Path | None) -> list[Question]:
        """All questions in a fixed order (``--limit N`` takes the first N)."""
        raise NotImplementedError

    @property
    def slug(self) -> str:
        """The task's part of a run folder name (``jsonl:my/q.jsonl`` tasks give ``jsonl-q``)."""
        return self.name

    def subtask_for(self, question: Question) -> str:
        """The report column of ``question``: the task's label (custom prompt files may use its category)."""
        return self.subtask

    def user_message(self, question: Question, turn: int) -> str:
        """The user message for turn ``turn`` (0-based); override to wrap the raw text."""
        return question.turns[turn]

    def messages(self, question: Question, turn: int, previous_answers: list[str]) -> list[dict[str, Any]]:
        """Chat messages for turn ``turn``; earlier turns use ``previous_answers`` (the AR answers)."""
        msgs: list[dict[str, Any]] = []
        for t in range(turn):
            msgs.append({"role": "user", "content": self.user_message(question, t)})
            msgs.append({"role": "assistant", "content": previous_answers[t]})
        msgs.append({"role": "user", "content": self.user_message(question, turn)})
        return msgs


def encode_prompt(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    """Token ids of ``messages`` through the tokenizer's own chat template, ready for the reply."""
    if not getattr(tokenizer, "chat_template", None):
        # base models without a template: plain concatenation of the user turns
        text = "\n\n".join(m["content"] for m in messages) + "\n"
        return list(tokenizer(text)["input_ids"])
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return [int(i) for i in ids]
