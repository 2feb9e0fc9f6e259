"""A specbench run folder -> Spec-Bench model-answer files (one ``<model_id>.jsonl`` per method).

Records of one (method, question, repeat) become one answer line, repeat ``r`` its choice ``r``, turns
in order: ``new_tokens`` = the record's ``new_tokens``, ``wall_time`` = ``wall_time_s``,
``decoding_steps`` = ``forward_passes`` (prefill included: Spec-Bench's baseline counts one step per
token too) and ``accept_lengths`` the per-pass lists run together. The answer texts are the output ids
decoded with the run's tokenizer, or for an imported run the texts the import kept, so importing a
folder and exporting it again gives back Spec-Bench's files. The baseline ``ar`` is written as
``<model>-vanilla-<dtype>-temp-0.0.jsonl``, Spec-Bench's name for it, so its ``speed.py`` finds it.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from typing import Any

from specbench.errors import UserError
from specbench.files.safe_names import inside
from specbench.interop.spec_bench_format import model_file_stem, write_answer_file
from specbench.interop.spec_bench_import import read_texts
from specbench.reports.labels import dtype_label, model_label
from specbench.results.record import Record
from specbench.results.loaded_run import Run, load_run


def _question_id(qid: str) -> int | str:
    return int(qid) if qid.isdigit() else qid


def _epoch(manifest: dict[str, Any]) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(manifest.get("timestamp"))).timestamp()
    except ValueError:
        return None


def _groups(run: Run) -> dict[str, dict[tuple[str, str], dict[int, list[Record]]]]:
    """method -> (task, question) in record order -> repeat -> its turns in order."""
    out: dict[str, dict[tuple[str, str], dict[int, list[Record]]]] = {}
    for r in run.records:
        out.setdefault(r.method, {}).setdefault((r.task, r.question_id), {}).setdefault(r.repeat, []).append(r)
    for questions in out.values():
        for repeats in questions.values():
            for turns in repeats.values():
                turns.sort(key=lambda r: r.turn)
    return out


def needs_tokenizer(run: Run) -> bool:
    """Whether some answer's text must be decoded from output ids (it was not kept by an import)."""
    texts = read_texts(run.path)
    return any((r.method, r.question_id, r.repeat) not in texts for r in run.records)


def export_answers(run_dir: str | Path, out_dir: str | Path, tokenizer: Any | None = None) -> list[Path]:
    """Write one answer file per method of the run into ``out_dir``; returns their paths."""
    run = load_run(run_dir)
    if not run.records:
        raise UserError(f"run folder has no records: {run_dir}")
    texts = read_texts(run.path)
    imported = run.manifest.get("imported") or {}
    ids = {m: f.get("model_id") for m, f in (imported.get("files") or {}).items()}
    model, dtype = model_label(run.manifest), dtype_label(run.manifest)
    tstamp = _epoch(run.manifest)
    groups = _groups(run)
    model_ids = {m: ids.get(m) or model_file_stem(model, m, dtype) for m in groups}
    # every file name checked before the first is written: a hostile model_id never leaves ``out_dir``
    targets = {m: inside(out_dir, f"{i}.jsonl", f"answer file of {m!r:.60}") for m, i in model_ids.items()}
    paths = []
    for method, questions in groups.items():
        model_id = model_ids[method]
        rows = []
        for (task, qid), repeats in questions.items():
            first = next(iter(repeats.values()))[0]
            kept = texts.get((method, qid, first.repeat)) or {}
            choices = []
            for repeat, turns in sorted(repeats.items()):
                text = (texts.get((method, qid, repeat)) or {}).get("turns")
                if text is None:
                    if tokenizer is None:
                        raise UserError("the answer texts need the run's tokenizer; pass --tokenizer")
                    text = [tokenizer.decode(r.output_ids, skip_special_tokens=True) for r in turns]
                choices.append({"index": repeat, "turns": text,
                                "decoding_steps": [r.forward_passes for r in turns],
                                "new_tokens": [r.new_tokens for r in turns],
                                "wall_time": [r.wall_time_s for r in turns],
                                "accept_lengths": [a for r in turns for a in r.accept_lengths]})
            answer_id = kept.get("answer_id") or hashlib.sha256(f"{model_id}/{task}/{qid}".encode()).hexdigest()[:22]
            rows.append({"question_id": kept.get("question_id", _question_id(qid)),
                         "category": kept.get("category") or first.category or first.subtask,
                         "answer_id": answer_id, "model_id": model_id, "choices": choices,
                         "tstamp": kept.get("tstamp", tstamp)})
        path = targets[method]
        write_answer_file(path, rows)
        paths.append(path)
    return paths
