"""Spec-Bench's model-answer files: reading them with one-line errors, naming, and writing them.

Spec-Bench (hemingkx/Spec-Bench) writes one JSONL file per method, ``model_answer/<model_id>.jsonl``,
one line per question:

    {"question_id": 81, "category": "writing", "answer_id": "...", "model_id": "vicuna-7b-v1.3-eagle-float16",
     "choices": [{"index": 0, "turns": ["answer 1", "answer 2"], "decoding_steps": [120, 98],
                  "new_tokens": [301, 254], "wall_time": [3.1, 2.6], "accept_lengths": [3, 1, 4, ...]}],
     "tstamp": 1712345678.9}

Per choice, ``turns``, ``decoding_steps``, ``new_tokens`` and ``wall_time`` hold one entry per turn;
``accept_lengths`` is one flat list over all turns (tokens emitted per decoding step). The baseline is
the ``vanilla`` file (``<model>-vanilla-<dtype>-temp-0.0``). Spec-Bench's categories map onto
specbench's tasks (``CATEGORY_TASKS``).

>>> split_name("vicuna-7b-v1.3-lade-level-5-win-7-guess-7-float16", ["vicuna", "7b", "v1.3"])
('lade-level-5-win-7-guess-7', 'float16')
>>> split_by_steps([1, 3, 2, 1], [3, 1])
[[1, 3, 2], [1]]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.catalog import BASELINE, MT_BENCH_CATEGORIES
from specbench.errors import UserError
from specbench.files.jsonfile import parse_jsonl, strict_json
from specbench.files.safe_names import NAME_RULE, is_safe_name

CATEGORY_TASKS = {**dict.fromkeys(MT_BENCH_CATEGORIES, "mt_bench"), "translation": "wmt",
                  "summarization": "cnndm", "qa": "nq", "math_reasoning": "gsm8k", "rag": "nq_rag"}
BASELINE_NAMES = ("vanilla", "baseline")  # Spec-Bench's name for autoregressive decoding
DTYPE_TOKENS = ("float16", "bfloat16", "float32", "float64", "fp16", "bf16", "fp32")
PER_TURN = ("turns", "new_tokens", "wall_time")


class SpecBenchFormatError(UserError):
    """A Spec-Bench answer file that does not have the documented shape (``path:line: what``)."""


@dataclass
class AnswerFile:
    """One method's answers: its file, the ``model_id`` it names, the parsed lines and their line numbers."""

    path: Path
    model_id: str
    rows: list[dict[str, Any]]
    line_numbers: list[int] = field(default_factory=list)  # of each row in ``path`` (errors name the input line)

    def where(self, row: int) -> str:
        """``path:line`` of row number ``row`` (the path alone when the lines are not known)."""
        return f"{self.path}:{self.line_numbers[row]}" if row < len(self.line_numbers) else str(self.path)


def _number_list(where: str, choice: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> list:
    value = choice.get(key)
    if not isinstance(value, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
        raise SpecBenchFormatError(f"{where}: choices[].{key} must be a list of numbers")
    return value


def check_row(where: str, row: Any) -> dict[str, Any]:
    """``row`` if it has Spec-Bench's answer shape; otherwise a one-line ``SpecBenchFormatError``."""
    if not isinstance(row, dict):
        raise SpecBenchFormatError(f"{where}: expected a JSON object")
    for key in ("question_id", "category", "choices"):
        if key not in row:
            raise SpecBenchFormatError(f"{where}: missing {key!r} (not a Spec-Bench model answer)")
    if not isinstance(row["choices"], list) or not row["choices"]:
        raise SpecBenchFormatError(f"{where}: 'choices' must be a non-empty list")
    for choice in row["choices"]:
        if not isinstance(choice, dict):
            raise SpecBenchFormatError(f"{where}: each choice must be an object")
        turns = choice.get("turns")
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
            raise SpecBenchFormatError(f"{where}: choices[].turns must be a non-empty list of strings")
        lengths = {len(_number_list(where, choice, k, (int, float))) for k in PER_TURN[1:]} | {len(turns)}
        if "decoding_steps" in choice:
            lengths.add(len(_number_list(where, choice, "decoding_steps", int)))
        if len(lengths) != 1:
            raise SpecBenchFormatError(f"{where}: turns, new_tokens, wall_time (and decoding_steps) differ in length")
        if not all(isinstance(n, int) for n in choice["new_tokens"]):
            raise SpecBenchFormatError(f"{where}: choices[].new_tokens must be integers")
        if "accept_lengths" in choice:
            _number_list(where, choice, "accept_lengths", (int, float))
    return row


def read_answer_file(path: Path) -> AnswerFile:
    """All answers of one file; empty or malformed files raise naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise SpecBenchFormatError(f"{path}: not UTF-8 text (byte {e.start})") from None
    numbered = parse_jsonl(str(path), lines, SpecBenchFormatError)
    rows = [check_row(f"{path}:{n}", row) for n, row in numbered]
    if not rows:
        raise SpecBenchFormatError(f"{path}: no answers (the file is empty)")
    ids = [str(r["question_id"]) for r in rows]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup is not None:
        raise SpecBenchFormatError(f"{path}: question_id {dup} answered twice")
    model_id = rows[0].get("model_id")
    return AnswerFile(path, model_id if isinstance(model_id, str) and model_id else path.stem, rows,
                      [n for n, _ in numbered])


def common_prefix(names: list[list[str]]) -> list[str]:
    """The leading ``-``-separated parts every name shares (the model's name)."""
    out: list[str] = []
    for parts in zip(*names):
        if len(set(parts)) != 1:
            break
        out.append(parts[0])
    return out


def split_name(model_id: str, prefix: list[str]) -> tuple[str, str | None]:
    """(method, dtype) of a Spec-Bench ``model_id`` once the model ``prefix`` is removed; the dtype and
    any ``-temp-...`` after it are dropped from the method's name."""
    parts = model_id.split("-")[len(prefix):]
    dtype = next((p for p in parts if p in DTYPE_TOKENS), None)
    if dtype is not None:
        parts = parts[: parts.index(dtype)]
    if parts[-2:-1] == ["temp"]:
        parts = parts[:-2]
    return "-".join(parts), dtype


def method_names(files: list[AnswerFile], baseline: str | None = None) -> tuple[str, dict[str, AnswerFile], str | None]:
    """(model name, {method: file} with the baseline as ``ar``, dtype) from the files' model ids.

    ``baseline`` names the baseline file (its name or stem); by default the file whose method is
    ``vanilla``/``baseline``. Each method keeps the part of its model id after the shared model name.
    """
    split = [f.model_id.split("-") for f in files]
    prefix = common_prefix(split) if len(files) > 1 else []
    if len(files) > 1 and len(prefix) == min(len(s) for s in split):
        prefix = prefix[:-1]  # one id is a prefix of another: keep a part for each method's name
    out: dict[str, AnswerFile] = {}
    dtypes = set()
    for f in files:
        method, dtype = split_name(f.model_id, prefix)
        dtypes.add(dtype)
        if baseline:
            is_base = baseline in (f.path.name, f.path.stem)
        else:
            is_base = any(part in BASELINE_NAMES for part in method.split("-"))
        method = BASELINE if is_base else (method or f.path.stem)
        _check_safe(f, method)
        if method in out:
            raise SpecBenchFormatError(f"{out[method].path.name} and {f.path.name} both read as method {method!r}"
                                       + ("; pass --baseline FILE" if method == BASELINE else "; rename one file"))
        out[method] = f
    if BASELINE not in out:
        hint = f"no file named {baseline!r}" if baseline else "no 'vanilla' file"
        raise SpecBenchFormatError(f"no baseline among the answer files ({hint}); pass --baseline FILE")
    model = "-".join(prefix) or files[0].model_id
    dtype = dtypes.pop() if len(dtypes) == 1 else None
    return model, out, dtype


def _check_safe(f: AnswerFile, method: str) -> None:
    """The file's ``model_id`` and the method name read from it pass the one whitelist of names that reach
    paths (``export-specbench`` writes ``<model_id>.jsonl``; the method names run folders and tables).

    >>> _check_safe(AnswerFile(Path("a.jsonl"), "m-x/../../escaped-float16", []), "x/../../escaped")
    Traceback (most recent call last):
    ...
    specbench.interop.spec_bench_format.SpecBenchFormatError: a.jsonl: model_id 'm-x/../../escaped-float16' is not a safe name (1-200 letters, digits, '.', '_', '-', not starting with '.'); it would name files
    """
    for what, name in (("model_id", f.model_id), ("method name", method)):
        if not is_safe_name(name):
            raise SpecBenchFormatError(f"{f.path}: {what} {name!r:.80} is not a safe name ({NAME_RULE}); it would name files")


def split_by_steps(accept_lengths: list[int], steps: list[int]) -> list[list[int]] | None:
    """The flat per-step list cut into turns of ``steps`` entries, or None when the counts disagree."""
    if sum(steps) != len(accept_lengths):
        return None
    out, i = [], 0
    for n in steps:
        out.append(list(accept_lengths[i:i + n]))
        i += n
    return out


def model_file_stem(model: str, method: str, dtype: str) -> str:
    """Spec-Bench's file name for a method: ``<model>-vanilla-<dtype>-temp-0.0`` for the baseline.

    >>> model_file_stem("HuggingFaceTB/SmolLM2-135M-Instruct (GGUF, dequantised)", "pld", "float32")
    'SmolLM2-135M-Instruct-pld-float32'
    """
    name = model.split(" (")[0].rstrip("/").rsplit("/", 1)[-1]  # the hub name, without a label's remarks
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"
    if method == BASELINE:
        return f"{safe}-vanilla-{dtype}-temp-0.0"
    return f"{safe}-{re.sub(r'[^A-Za-z0-9._-]+', '_', method)}-{dtype}"


def write_answer_file(path: Path, rows: list[dict[str, Any]]) -> None:
    """One JSON object a line, as Spec-Bench writes them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(strict_json(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
