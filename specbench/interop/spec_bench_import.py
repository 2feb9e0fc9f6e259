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
import sys
from pathlib import Path
from typing import Any

from specbench.catalog import task_label
from specbench.files.jsonfile import parse_jsonl, strict_json
from specbench.interop.spec_bench_format import (CATEGORY_TASKS, AnswerFile, SpecBenchFormatError, method_names,
                                                 read_answer_file, split_by_steps)
from specbench.results.record import Record
from specbench.results.record_consistency import record_problem
from specbench.results.run_folder import MANIFEST_FILE, RECORDS_FILE, RunFileError, write_records
from specbench.run.manifest import MANIFEST_SCHEMA_VERSION

TEXT_FILE = "spec_bench_text.jsonl"
IMPORTED_VERSION = "spec-bench"  # task version of imported records: Spec-Bench's prompts, not specbench's
BACKEND = "spec-bench-import"
NOTE = ("Imported from Spec-Bench answer files: tokens as Spec-Bench counted them (its new_tokens), timings "
        "as it measured them (whole generations, no draft/verify split); no token ids, so no lossless check "
        "is possible.")


def _records(method: str, answers: AnswerFile) -> tuple[list[Record], list[dict[str, Any]]]:
    records, texts = [], []
    for row in answers.rows:
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
                rec = Record(
                    method=method, task=task, subtask=task_label(task), task_version=IMPORTED_VERSION,
                    question_id=qid, category=category, turn=j + 1, repeat=repeat, prompt_tokens=0,
                    new_tokens=int(choice["new_tokens"][j]), wall_time_s=float(choice["wall_time"][j]),
                    forward_passes=int(steps[j]) if steps else len(accept), draft_time_s=0.0, verify_time_s=0.0,
                    accept_lengths=accept,
                )
                problem = record_problem(rec)  # (refused here, naming the input, before anything is written)
                if problem:
                    raise SpecBenchFormatError(f"{answers.path}: question {qid} choice {repeat} turn {j + 1}: "
                                               f"{problem}; nothing imported")
                records.append(rec)
            texts.append({"method": method, "question_id": row["question_id"], "category": category,
                          "repeat": repeat, "turns": choice["turns"], "answer_id": row.get("answer_id"),
                          "model_id": row.get("model_id"), "tstamp": row.get("tstamp")})
    return records, texts


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
    records, texts = [], []
    for method, answers in by_method.items():
        recs, txt = _records(method, answers)
        records += recs
        texts += txt
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
    dst.mkdir(parents=True, exist_ok=True)
    write_records(dst / RECORDS_FILE, records)
    (dst / TEXT_FILE).write_text("".join(strict_json(t, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    (dst / MANIFEST_FILE).write_text(strict_json(manifest, indent=2), encoding="utf-8")
    return manifest


def read_texts(run_dir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The answer texts an import kept: ``(method, question_id, repeat)`` -> its line."""
    path = run_dir / TEXT_FILE
    if not path.is_file():
        return {}
    out = {}
    for _, row in parse_jsonl(str(path), path.read_text(encoding="utf-8").splitlines(), RunFileError):
        out[(row["method"], str(row["question_id"]), int(row["repeat"]))] = row
    return out
