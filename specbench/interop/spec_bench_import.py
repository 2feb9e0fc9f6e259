"""Spec-Bench model answers -> a specbench run folder marked ``imported``.

Each (answer line, choice, turn) becomes one ``Record``: the baseline file's as ``ar``, the others under
the method name their file carries (``vicuna-7b-v1.3-eagle-float16`` -> ``eagle``); choice ``i`` is
repeat ``i``; Spec-Bench's category picks the task (``writing`` -> ``mt_bench``, ``translation`` ->
``wmt``; unknown categories become tasks of their own). What a record can hold is what Spec-Bench
wrote: ``new_tokens`` (its token count: tokens as Spec-Bench counted them), ``wall_time`` (its timed
generation), ``decoding_steps`` (forward passes, so tau = tokens / steps) and ``accept_lengths``.
There are no token ids, so no lossless check is possible; records carry ``lossless_class`` null, the
manifest says so under ``imported.note`` and reports, leaderboards and ``compare`` show it. The answer
texts go to ``spec_bench_text.jsonl`` beside the records, so ``export-specbench`` gives them back.

Example: ``specbench import-specbench data/spec_bench/model_answer --out results/vicuna_a100 --hardware "A100 80GB"``.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from specbench.catalog import task_label
from specbench.errors import UserError
from specbench.files.jsonfile import parse_jsonl, strict_json, write_text_atomic
from specbench.files.stale_tmp import remove_stale_tmp, tmp_sibling
from specbench.interop.spec_bench_format import (CATEGORY_TASKS, AnswerFile, SpecBenchFormatError, method_names,
                                                 read_answer_file, split_by_steps)
from specbench.results.record import Record
from specbench.results.loaded_run import load_run
from specbench.results.record_consistency import record_problem
from specbench.results.run_folder import MANIFEST_FILE, RECORDS_FILE, RunFileError, parse_record_line, write_records
from specbench.run.manifest import MANIFEST_SCHEMA_VERSION

TEXT_FILE = "spec_bench_text.jsonl"
IMPORTED_VERSION = "spec-bench"  # task version of imported records: Spec-Bench's prompts, not specbench's
BACKEND = "spec-bench-import"
NOTE = ("Imported from Spec-Bench answer files: tokens as Spec-Bench counted them (its new_tokens), timings "
        "as it measured them (whole generations, no draft/verify split); no token ids, so no lossless check "
        "is possible.")


def _records(method: str, answers: AnswerFile) -> tuple[list[Record], list[dict[str, Any]], list[str]]:
    """The records of one answer file, their answer texts, and per record the ``path:line`` it came from."""
    records, texts, sources = [], [], []
    for n, row in enumerate(answers.rows):
        category = str(row["category"])
        task = CATEGORY_TASKS.get(category, category)
        qid = str(row["question_id"])
        for i, choice in enumerate(row["choices"]):
            repeat = int(choice.get("index", i))
            n_turns = len(choice["turns"])
            steps = choice.get("decoding_steps")
            per_turn = split_by_steps(choice.get("accept_lengths") or [], steps) if steps else None
            for j in range(n_turns):
                accept = [int(a) for a in per_turn[j]] if per_turn else []
                records.append(Record(
                    method=method, task=task, subtask=task_label(task), task_version=IMPORTED_VERSION,
                    question_id=qid, category=category, turn=j + 1, repeat=repeat, prompt_tokens=0,
                    new_tokens=int(choice["new_tokens"][j]), wall_time_s=float(choice["wall_time"][j]),
                    forward_passes=int(steps[j]) if steps else len(accept), draft_time_s=0.0, verify_time_s=0.0,
                    accept_lengths=accept,
                ))
                sources.append(answers.where(n))
            texts.append({"method": method, "question_id": row["question_id"], "category": category,
                          "repeat": repeat, "turns": choice["turns"], "answer_id": row.get("answer_id"),
                          "model_id": row.get("model_id"), "tstamp": row.get("tstamp")})
    return records, texts, sources


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_answers(answer_dir: str | Path, out: str | Path, baseline: str | None = None,
                   hardware: str | None = None, model: str | None = None,
                   max_new_tokens: int | None = None) -> dict[str, Any]:
    """Write ``out`` (a new run folder) from the ``*.jsonl`` answer files in ``answer_dir``; returns its manifest."""
    src, dst = Path(answer_dir), Path(out)
    if not src.is_dir():
        raise FileNotFoundError(f"answer folder not found: {src}")
    if dst.exists() and any(dst.iterdir()):
        raise SpecBenchFormatError(f"{dst} exists and is not empty; pick a new --out folder")
    paths = sorted(src.glob("*.jsonl"))
    if not paths:
        raise SpecBenchFormatError(f"{src}: no *.jsonl answer files")
    model_name, by_method, dtype = method_names([read_answer_file(p) for p in paths], baseline)
    records, texts, sources = [], [], []
    for method, answers in by_method.items():
        recs, txt, src_lines = _records(method, answers)
        records += recs
        texts += txt
        sources += src_lines
    check_records(records, sources)
    questions: dict[str, list[str]] = {}
    for r in records:
        if r.method == "ar" and r.turn == 1 and r.repeat == 0:
            questions.setdefault(r.task, []).append(r.question_id)
    files = {m: {"file": f.path.name, "sha256": _sha256(f.path), "model_id": f.model_id} for m, f in by_method.items()}
    manifest = {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "run_name": dst.name,
        "imported": {"from": "Spec-Bench model answers", "source": str(src), "files": files, "note": NOTE},
        "config_digest": "imported-" + hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:8],
        "config": {"methods": list(by_method), "tasks": list(questions), "max_new_tokens": max_new_tokens,
                   "limit": None, "repeats": 1 + max(r.repeat for r in records), "dtype": dtype, "model": None},
        "model": {"id": model or model_name, "dtype": dtype or "unknown", "hash": None, "tf32": "not recorded"},
        "hardware": {"cpu": "not recorded (Spec-Bench import)", "device": "cuda" if hardware else "unknown",
                     "gpu": f"{hardware} (Spec-Bench import)" if hardware else None},
        "backend": {"name": BACKEND, "note": NOTE},
        "versions": {},
        "git_commit": None,
        "method_configs": {m: {"spec_bench_model_id": f.model_id} for m, f in by_method.items()},
        "questions": questions,
        "task_versions": dict.fromkeys(questions, IMPORTED_VERSION),
        "subtasks": {t: task_label(t) for t in questions},
    }
    files_text = {TEXT_FILE: "".join(strict_json(t, ensure_ascii=False) + "\n" for t in texts),
                  MANIFEST_FILE: strict_json(manifest, indent=2)}
    write_run_atomically(dst, records, files_text, sources)
    return manifest


def check_records(records: list[Record], sources: list[str]) -> None:
    """Each record as every reader will check it (types, finite and non-negative times, ...): the first
    problem is a one-line error naming the answer file and line it came from, before anything is written."""
    for rec, where in zip(records, sources):
        try:
            parse_record_line(strict_json(rec.to_json(), compact=True))
        except ValueError as e:
            raise SpecBenchFormatError(f"{where}: {e}") from None
        problem = record_problem(rec)  # (an impossible time or count: refused naming the input, nothing written)
        if problem:
            raise SpecBenchFormatError(f"{where}: question {rec.question_id} turn {rec.turn}: {problem}; "
                                       "nothing imported")


def write_run_atomically(dst: Path, records: list[Record], files: dict[str, str], sources: list[str]) -> None:
    """Write ``records`` and ``files`` (name -> text) into a temporary sibling of ``dst``, read it back as every command will
    (``load_run``), and only then rename it into place: a failed import leaves no half-written run folder.
    A problem found on reading back names the answer file's line (records are written one a line, in the
    order of ``sources``), never the temporary folder's."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(dst.parent)  # (what an import killed with SIGKILL left)
    tmp = tmp_sibling(dst)
    try:
        tmp.mkdir()
        write_records(tmp / RECORDS_FILE, records)
        for name, text in files.items():
            write_text_atomic(tmp / name, text)
        try:
            load_run(tmp)
        except (UserError, ValueError) as e:
            raise SpecBenchFormatError(_input_line(str(e), tmp / RECORDS_FILE, sources)) from None
        if dst.is_dir():
            dst.rmdir()  # (empty: checked before; a file placed there since makes this fail, not vanish)
        tmp.rename(dst)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _input_line(message: str, records_path: Path, sources: list[str]) -> str:
    """``message`` about ``records_path:N`` told about the answer line record ``N`` came from.

    >>> _input_line("/t/.r.tmp-1/records.jsonl:3: wall time far from its steps", Path("/t/.r.tmp-1/records.jsonl"),
    ...             ["a.jsonl:1", "a.jsonl:1", "b.jsonl:7"])
    'b.jsonl:7: wall time far from its steps'
    """
    match = re.match(re.escape(str(records_path)) + r":(\d+): (.*)", message, re.S)
    if match and 1 <= int(match[1]) <= len(sources):
        return f"{sources[int(match[1]) - 1]}: {match[2]}"
    return message.replace(str(records_path.parent), "(imported run)")


def read_texts(run_dir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The answer texts an import kept: ``(method, question_id, repeat)`` -> its line."""
    path = run_dir / TEXT_FILE
    if not path.is_file():
        return {}
    out = {}
    for _, row in parse_jsonl(str(path), path.read_text(encoding="utf-8").splitlines(), RunFileError):
        out[(row["method"], str(row["question_id"]), int(row["repeat"]))] = row
    return out
