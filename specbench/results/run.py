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
from specbench.results.run_folder import read_manifest
from specbench.results.validation import read_validated_records


@dataclass
class Run:
    """A loaded run folder: its manifest and records."""

    path: Path
    manifest: dict[str, Any]
    records: list[Record]

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


def load_run(run_dir: str | Path) -> Run:
    """Read ``manifest.json`` and ``records.jsonl`` of a run folder (FileNotFoundError if not a run), every
    record checked against the manifest (``specbench.results.validation``: one-line ``RunFileError`` otherwise)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"run folder not found: {run_dir}")
    manifest = read_manifest(path)
    return Run(path, manifest, read_validated_records(path, manifest))
