"""A run folder loaded for reading: its manifest and its records, every record checked against the manifest.

>>> from pathlib import Path
>>> Run(Path("results/demo"), {"config": {"methods": ["ar", "pld"]}}, []).name
'demo'
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.catalog import BASELINE, ENGINE_BASELINE, is_engine_row, order_subtasks
from specbench.results.record import Record
from specbench.results.relabel import rederived
from specbench.results.run_folder import read_manifest
from specbench.results.validation import read_validated_records


@dataclass
class Run:
    """A loaded run folder: its manifest and records."""

    path: Path
    manifest: dict[str, Any]
    records: list[Record]  # a run decoded at several batch sizes: those of one size (``at_batch``)
    every: list[Record] | None = None  # every record of the folder, all batch sizes (None: ``records``)

    @property
    def name(self) -> str:
        return self.path.name

    def methods(self) -> list[str]:
        """Methods in the run, baseline first, then in manifest/config order (else alphabetical)."""
        present = {r.method for r in self.records}
        order = list((self.manifest.get("config") or {}).get("methods") or [])
        rest = sorted(present - set(order))
        out = [m for m in order if m in present] + rest
        return sorted(out, key=lambda m: m != BASELINE)

    def subtasks(self) -> list[str]:
        return order_subtasks({r.subtask for r in self.records})

    def batch_sizes(self) -> list[int]:
        """The batch sizes the folder's records were decoded at (``[1]`` for an unbatched run)."""
        return sorted({r.unit.batch for r in self.every or self.records})

    def at_batch(self, size: int) -> "Run":
        """The run seen at one batch size: its records decoded ``size`` at a time, AR's included, so every
        statistic pairs a method with AR at the same size."""
        every = self.every or self.records
        return Run(self.path, self.manifest, [r for r in every if r.unit.batch == size], every)

    def base_batch(self) -> int:
        """The batch size a report leads with: the smallest one at which a method other than AR ran."""
        every = self.every or self.records
        drafted = {r.unit.batch for r in every if r.method != BASELINE}
        return min(drafted) if drafted else 1


OWN, ENGINE, ALL = "specbench", "engine", "all"  # the subjects a run's records belong to (``subject_view``)


def has_engine(records: list[Record]) -> bool:
    """Whether an engine under test has rows among ``records``."""
    return any(is_engine_row(r.method) for r in records)


def subject_view(run: Run, subject: str) -> Run:
    """The run as one subject sees it, so every statistic pairs a row with its own baseline: ``specbench`` = its
    own methods against ``ar``; ``engine`` = the engine's rows against ``engine:off``, which the view names ``ar``
    (the baseline every table knows), its manifest's methods and batch sizes those of the engine's rows (its
    concurrency levels), its backend the engine; ``all`` = the run as it is.

    >>> from specbench.results.record import Record
    >>> def rec(m): return Record(m, "gsm8k", "GSM8K", "1", "1", "", 1, 0, 3, 1, 0.1, 1, 0.0, 0.1, output_ids=[5])
    >>> run = Run(Path("r"), {"config": {"methods": ["ar", "engine:off", "engine:ngram"], "concurrency": [1, 4]}},
    ...           [rec("ar"), rec("engine:off"), rec("engine:ngram")])
    >>> [r.method for r in subject_view(run, "engine").records], subject_view(run, "engine").manifest["config"]["batch_size"]
    (['ar', 'engine:ngram'], [1, 4])
    >>> [r.method for r in subject_view(run, "specbench").records]
    ['ar']
    """
    if subject == ALL:
        return run
    every = run.every or run.records
    manifest = copy.deepcopy(run.manifest)
    cfg = manifest.setdefault("config", {})
    if subject == OWN:  # (its manifest's methods its own, so what it plans is what it holds)
        cfg["methods"] = [m for m in cfg.get("methods") or [] if not is_engine_row(m)]
        return Run(run.path, manifest, [r for r in every if not is_engine_row(r.method)])
    records = [dataclasses.replace(r, method=BASELINE) if r.method == ENGINE_BASELINE else r
               for r in every if is_engine_row(r.method)]
    cfg["methods"] = [BASELINE] + [m for m in cfg.get("methods") or [] if is_engine_row(m) and m != ENGINE_BASELINE]
    cfg["batch_size"] = cfg.get("concurrency") or [1]
    cfg["refill"] = True  # (a finished request's place goes to the next at once)
    manifest["backend"] = {"name": engine_label(manifest)}
    manifest["view"] = ENGINE
    return Run(run.path, manifest, records)


def engine_label(manifest: dict[str, Any]) -> str:
    """The engine of a run in one line: ``llama-server 0.5.0-dev (build 1, commit 0c1e570) (2 threads)``.

    >>> engine_label({"engine": {"kind": "llama-server", "version": "version: 1 (abc) | built with gcc", "threads": 2}})
    'llama-server 1 (abc) (2 threads)'
    """
    engine = manifest.get("engine") or {}
    kind = str(engine.get("kind") or (manifest.get("config") or {}).get("engine") or "engine")
    version = str(engine.get("version") or "").split(" | ")[0].removeprefix("version: ")
    threads = engine.get("threads")
    return " ".join(p for p in (kind, version, f"({threads} threads)" if threads else "") if p)


def load_run(run_dir: str | Path, every_batch: bool = False, stored_labels: bool = False,
             subject: str = OWN) -> Run:
    """Read ``manifest.json`` and ``records.jsonl`` of a run folder (FileNotFoundError if not a run), every
    record checked against the manifest (``specbench.results.validation``: one-line ``RunFileError`` otherwise)
    and its lossless class derived again from its output ids (``relabel``: what ``check`` says), unless
    ``stored_labels`` (``check`` itself, to name the labels that differ).

    A run decoded at several batch sizes is seen at its ``base_batch`` (every statistic pairs records of
    one size), with the other sizes in ``every`` (``at_batch``); ``every_batch``: all records at once.
    A run with an engine under test is seen as ``subject`` sees it (``subject_view``: by default specbench's own
    methods, so no reader pairs an engine's row with ``ar``).
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"run folder not found: {run_dir}")
    manifest = read_manifest(path)
    records = read_validated_records(path, manifest)
    run = Run(path, manifest, records if stored_labels else rederived(records, manifest))
    if has_engine(run.records):
        run = subject_view(run, subject)
    if every_batch or run.batch_sizes() == [1]:
        return run
    return run.at_batch(run.base_batch())
