"""A run folder loaded for reading: its manifest and its records, every record checked against the manifest.

>>> from pathlib import Path
>>> Run(Path("results/demo"), {"config": {"methods": ["ar", "pld"]}}, []).name
'demo'
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.catalog import BASELINE, order_subtasks
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


def load_run(run_dir: str | Path, every_batch: bool = False, stored_labels: bool = False) -> Run:
    """Read ``manifest.json`` and ``records.jsonl`` of a run folder (FileNotFoundError if not a run), every
    record checked against the manifest (``specbench.results.validation``: one-line ``RunFileError`` otherwise)
    and its lossless class derived again from its output ids (``relabel``: what ``check`` says), unless
    ``stored_labels`` (``check`` itself, to name the labels that differ).

    A run decoded at several batch sizes is seen at its ``base_batch`` (every statistic pairs records of
    one size), with the other sizes in ``every`` (``at_batch``); ``every_batch``: all records at once.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"run folder not found: {run_dir}")
    manifest = read_manifest(path)
    records = read_validated_records(path, manifest)
    run = Run(path, manifest, records if stored_labels else rederived(records, manifest))
    if every_batch or run.batch_sizes() == [1]:
        return run
    return run.at_batch(run.base_batch())
