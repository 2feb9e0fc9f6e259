"""A run's records checked against its manifest, by every reader (report, leaderboard, compare, check,
summary, export, sweep, merge, a resumed run): nothing foreign is ever pooled into a table.

A record is refused, in one line naming the file and line (``RunFileError``, exit 2), when

- its (method, unit) key was already seen: the file holds records of two runs (pooling them would count
  AR twice and inflate speedups);
- its method, task or question is not one of the manifest's, its task version differs from the
  manifest's, or it was sampled with other settings (T=0 and T=1 records never mix);
- it was written under another configuration (``config_digest``; records from before the field: unknown);
- a token id is not an integer in ``[0, vocab_size)`` (the manifest's ``model.vocab_size``; manifests from
  before it bound ids by 2^31 only).

Each check applies where the manifest records the field (older and imported manifests record less).
``missing_records`` lists what the manifest expects and the records lack (``specbench check`` fails on it).

>>> from specbench.results.record import Record
>>> r = Record("pld", "gsm8k", "GSM8K", "1", "1", "", 1, 0, 3, 1, 0.1, 1, 0.0, 0.1, [1], [0], [0.0], [7])
>>> record_problem(r, RunExpectations.from_manifest({"config": {"methods": ["ar"]}}))
"method 'pld' is not one of the run's methods in manifest.json (ar)"
>>> record_problem(r, RunExpectations.from_manifest({"model": {"vocab_size": 5}}))
'token id 7 at output position 0 is outside the vocabulary [0, 5)'
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.catalog import is_baseline, is_engine_row
from specbench.engine.sampling_config import manifest_sampling, sampling_from_dict
from specbench.results.record import Record, Unit
from specbench.results.run_folder import MANIFEST_FILE, RECORDS_FILE, RunFileError, read_numbered_records

ID_LIMIT = 2**31  # token ids of manifests that do not record the vocabulary: int32, as datastores store them


@dataclass(frozen=True)
class RunExpectations:
    """What a manifest says the records are (None: the manifest does not say)."""

    methods: frozenset[str] | None
    questions: dict[str, frozenset[str]] | None
    task_versions: dict[str, str]
    sampling: Any
    digests: frozenset[str] | None
    vocab_size: int | None

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any]) -> "RunExpectations":
        cfg = manifest.get("config") or {}
        methods = cfg.get("methods")
        questions = manifest.get("questions")
        if manifest.get("imported") or not isinstance(questions, dict):
            questions = None  # an import lists AR's questions only
        digests = {manifest.get("config_digest")} | {m.get("config_digest") for m in manifest.get("merged_from") or []
                                                      if isinstance(m, dict)}
        digests.discard(None)
        vocab = (manifest.get("model") or {}).get("vocab_size")
        return cls(
            methods=frozenset(map(str, methods)) if isinstance(methods, list) and methods else None,
            questions={t: frozenset(map(str, ids)) for t, ids in questions.items()} if questions else None,
            task_versions={t: str(v) for t, v in (manifest.get("task_versions") or {}).items()},
            sampling=manifest_sampling(manifest),
            digests=frozenset(digests) or None,
            vocab_size=vocab if isinstance(vocab, int) and not isinstance(vocab, bool) and vocab > 0 else None,
        )


def record_problem(rec: Record, expect: RunExpectations) -> str | None:
    """Why ``rec`` does not belong to the run ``expect`` describes, or None."""
    if expect.methods is not None and rec.method not in expect.methods:
        return (f"method {rec.method!r} is not one of the run's methods in {MANIFEST_FILE} "
                f"({', '.join(sorted(expect.methods))})")
    if expect.questions is not None:
        if rec.task not in expect.questions:
            return f"task {rec.task!r} is not one of the run's tasks in {MANIFEST_FILE} ({', '.join(expect.questions)})"
        if rec.question_id not in expect.questions[rec.task]:
            return f"question {rec.task}/{rec.question_id} is not one of the run's questions in {MANIFEST_FILE}"
    version = expect.task_versions.get(rec.task)
    if version is not None and rec.task_version != version:
        return f"task {rec.task} version {rec.task_version} differs from the run's ({version}, {MANIFEST_FILE})"
    sampling = sampling_from_dict(rec.sampling)
    if sampling != expect.sampling and not (sampling.greedy and expect.sampling.greedy):  # (greedy: seeds unused)
        return f"sampled with {sampling.label()} seed {sampling.seed}, but the run is {expect.sampling.label()} " \
               f"seed {expect.sampling.seed} ({MANIFEST_FILE})"
    if rec.config_digest is not None and expect.digests is not None and rec.config_digest not in expect.digests:
        return f"written under configuration {rec.config_digest}, not the run's ({', '.join(sorted(expect.digests))})"
    limit = expect.vocab_size or ID_LIMIT
    for pos, tid in enumerate(rec.output_ids):
        if not 0 <= tid < limit:
            what = "the vocabulary" if expect.vocab_size else "the int32 range"
            return f"token id {tid} at output position {pos} is outside {what} [0, {limit})"
    return None


def validate_records(run_dir: str | Path, manifest: dict[str, Any], numbered: list[tuple[int, Record]]) -> list[Record]:
    """The records, after checking each against the manifest and for duplicate keys (``RunFileError``)."""
    where = Path(run_dir) / RECORDS_FILE
    expect = RunExpectations.from_manifest(manifest)
    seen: dict[tuple[str, Unit], int] = {}
    for line, rec in numbered:
        problem = record_problem(rec, expect)
        if problem is None and rec.key in seen:
            problem = (f"duplicate record {rec.method} {rec.unit} (also line {seen[rec.key]}): each (method, unit) "
                       "is written once, so this file mixes records of two runs")
        if problem:
            raise RunFileError(f"{where}:{line}: {problem}")
        seen[rec.key] = line
    return [rec for _, rec in numbered]


def read_validated_records(run_dir: str | Path, manifest: dict[str, Any]) -> list[Record]:
    """``records.read_records`` plus ``validate_records``."""
    return validate_records(run_dir, manifest, read_numbered_records(run_dir))


def expected_keys(manifest: dict[str, Any], records: list[Record]) -> list[tuple[str, Unit]]:
    """Every (method, unit) the manifest's plan holds: its methods x questions x turns x repeats x batch sizes
    (AR always at batch size 1 too: the lossless reference of a batched run; an engine's rows at its concurrency
    levels, ``engine:off`` always at 1 too).

    The turns of each question are the manifest's ``turns`` (``{task: [n per question]}``); manifests
    from before it: the most turns any record of that question has (at least 1).
    """
    cfg = manifest.get("config") or {}
    methods = [str(m) for m in cfg.get("methods") or []]
    sizes = [int(b) for b in cfg.get("batch_size") or [1]]
    levels = [int(c) for c in cfg.get("concurrency") or [1]]  # an engine's rows: its concurrency levels
    labels = [(m, b) for m in methods for b in sorted(set(levels if is_engine_row(m) else sizes) | {1})
              if b in (levels if is_engine_row(m) else sizes) or is_baseline(m)]
    labels.sort(key=lambda mb: mb[1])  # (plan order: every size's methods together)
    questions = manifest.get("questions") or {}
    repeats = cfg.get("repeats") if isinstance(cfg.get("repeats"), int) else 1
    turns_of: dict[tuple[str, str], int] = {}
    for r in records:
        turns_of[(r.task, r.question_id)] = max(turns_of.get((r.task, r.question_id), 1), r.turn)
    listed = manifest.get("turns") or {}
    keys = []
    for task, ids in questions.items():
        counts = listed.get(task) if isinstance(listed.get(task), list) and len(listed[task]) == len(ids) else None
        for i, qid in enumerate(map(str, ids)):
            n = counts[i] if counts else turns_of.get((task, qid), 1)
            keys += [(m, Unit(task, qid, t, rep, b)) for t in range(1, n + 1) for rep in range(repeats) for m, b in labels]
    return keys


def missing_records(manifest: dict[str, Any], records: list[Record]) -> list[tuple[str, Unit]]:
    """The expected (method, unit) keys no record has, in plan order."""
    present = {r.key for r in records}
    return [k for k in expected_keys(manifest, records) if k not in present]
