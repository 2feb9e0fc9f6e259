"""Reading Spec-Bench's ``question.jsonl`` (data dir first, else the public file over HTTP)."""
from __future__ import annotations

import urllib.request
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from specbench.api import MT_BENCH_CATEGORIES, Question, Task, TaskDataError
from specbench_tasks._jsonl import parse_jsonl, question_turns, read_lines

SPEC_BENCH_URL = "https://raw.githubusercontent.com/hemingkx/Spec-Bench/main/data/spec_bench/question.jsonl"


def _read_lines(data_dir: Path | None) -> tuple[str, list[str]]:
    if data_dir is not None:
        path = data_dir / "spec_bench" / "question.jsonl"
        if not path.is_file():
            raise TaskDataError(f"Spec-Bench questions not found: {path}")
        return str(path), read_lines(path)
    try:  # real users without a data dir
        with urllib.request.urlopen(SPEC_BENCH_URL, timeout=60) as resp:
            return SPEC_BENCH_URL, resp.read().decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:  # (URLError and timeouts are OSErrors): offline is one line
        reason = getattr(e, "reason", None) or e
        raise TaskDataError(f"could not download Spec-Bench's questions from {SPEC_BENCH_URL} ({reason}); pass "
                            "--data-dir with a copy at spec_bench/question.jsonl") from None


@lru_cache(maxsize=4)
def _load_all(data_dir: Path | None) -> tuple[dict, ...]:
    where, lines = _read_lines(data_dir)
    rows = []
    for n, row in parse_jsonl(where, lines):
        if "category" not in row or not isinstance(row.get("turns"), list):
            raise TaskDataError(f"{where}:{n}: expected an object with 'category' and a 'turns' list")
        question_turns(where, n, row)
        rows.append(row)
    return tuple(rows)


def spec_bench_questions(data_dir: Path | None, task: str, categories: tuple[str, ...]) -> list[Question]:
    """Questions of the given Spec-Bench categories, in file order."""
    out = []
    for row in _load_all(data_dir):
        if row["category"] in categories:
            ref = row.get("reference") or []
            out.append(
                Question(
                    question_id=str(row.get("question_id", len(out))),
                    task=task,
                    turns=tuple(row["turns"]),
                    category=row["category"],
                    reference=tuple(r for r in ref if isinstance(r, str)),
                )
            )
    if not out:
        raise TaskDataError(f"no questions of categories {categories} in the Spec-Bench file")
    return out


class SpecBenchTask(Task):
    """A task made of Spec-Bench categories; subclasses set ``subtask`` and ``categories``."""

    categories: ClassVar[tuple[str, ...]] = ()

    def load(self, data_dir: Path | None) -> list[Question]:
        return spec_bench_questions(data_dir, self.name, self.categories)
