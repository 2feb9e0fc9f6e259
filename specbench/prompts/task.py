"""The task interface: a loader of ``Question``s plus how they become chat prompts, and its splits.

Splits keep calibration (``specbench sweep``) apart from evaluation: a task's **dev** split is the last
``ceil(10%)`` of its fixed question order, its **eval** split the rest, so ``--limit N`` on eval still
takes the same first questions it always took. ``all`` is every question. A task of fewer than 10
questions (a small prompt file of your own) has no dev split: every question is eval.

>>> dev_size(80), dev_size(164), dev_size(10), dev_size(3)
(8, 17, 1, 0)
>>> qs = [Question(str(i), "t", ("q",)) for i in range(12)]
>>> [q.question_id for q in split_questions("t", qs, "dev", dev_size(12))]
['10', '11']
>>> len(split_questions("t", qs, "eval", dev_size(12))), len(split_questions("t", qs, "all", dev_size(12)))
(10, 12)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from specbench.errors import TaskDataError

SPLITS = ("eval", "dev", "all")
DEFAULT_SPLIT = "eval"


def dev_size(n_questions: int) -> int:
    """How many of the last questions form the dev split: ceil(10%); none below 10 questions."""
    return -(-n_questions // 10) if n_questions >= 10 else 0


@dataclass(frozen=True)
class Question:
    """One benchmark question: user turns (MT-Bench has two) and an optional reference answer."""

    question_id: str
    task: str
    turns: tuple[str, ...]
    category: str = ""
    reference: tuple[str, ...] = field(default_factory=tuple)


class Task:
    """Base class for registered tasks. ``version`` changes whenever prompts or data change.

    A task that builds its prompts at a requested input length (``takes_context_length``, the long-input
    tasks) is run once per ``--context-length``: the plan asks ``at_context_length`` for an instance per
    length, named ``NAME@LENGTH`` (``long_low@2k``), whose records carry ``context_length``.
    """

    name: ClassVar[str] = ""
    subtask: ClassVar[str] = ""  # column label in reports; default: specbench.catalog.task_label(name)
    version: ClassVar[str] = "1"
    content_versioned: ClassVar[bool] = False  # version = a hash of the loaded prompts (the run digest carries it)
    takes_context_length: ClassVar[bool] = False
    context_length: int | None = None  # this instance's requested input length in tokens (None: the task has none)
    prompt_tokens: int | None = None  # the prompt length it builds for that (less when cut to fit the model)
    asked_length: int | None = None  # the --context-length asked (more than context_length past the model's context)

    def at_context_length(self, requested: int, tokens: int) -> "Task":
        """This task with prompts of exactly ``tokens`` tokens, standing for the requested length ``requested``
        (``tokens`` is less when ``requested`` does not fit the model: ``specbench.run.guards.fitted_length``)."""
        raise TaskDataError(f"task {self.name} has no input length (--context-length applies to long-input tasks)")

    def load(self, data_dir: Path | None) -> list[Question]:
        """All questions in a fixed order (``--limit N`` takes the first N of the chosen split)."""
        raise NotImplementedError

    def dev_size(self, n_questions: int) -> int:
        """How many of the last of the ``n_questions`` loaded questions are the dev split (see ``dev_size``)."""
        return dev_size(n_questions)

    def split(self, questions: list[Question], split: str) -> list[Question]:
        """``questions`` (as loaded) restricted to ``split``: ``eval``, ``dev`` or ``all``."""
        return split_questions(self.name, questions, split, self.dev_size(len(questions)))

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


def split_questions(task: str, questions: list[Question], split: str, n_dev: int) -> list[Question]:
    """The ``split`` of ``questions`` whose last ``n_dev`` are the dev split; an empty split raises."""
    if split not in SPLITS:
        raise TaskDataError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
    n_dev = min(n_dev, len(questions))
    cut = len(questions) - n_dev
    out = {"eval": questions[:cut], "dev": questions[cut:], "all": questions}[split]
    if not out:
        why = "fewer than 10 questions have no dev split" if split == "dev" else f"the last {n_dev} form the dev split"
        raise TaskDataError(f"task {task}: its {split} split is empty ({len(questions)} question(s); {why})")
    return list(out)


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
