"""A run folder's files: append-only ``records.jsonl`` (one ``Record`` a line) and ``manifest.json``.

>>> import tempfile
>>> from specbench.record import Record
>>> d = tempfile.mkdtemp()
>>> with RecordWriter(d) as w:
...     w.write(Record("ar", "gsm8k", "GSM8K", "1", "q1", "", 1, 0, 3, 1, 0.1, 1, 0.0, 0.1, [1], [0], [0.0], [9]))
>>> [r.unit for r in read_records(d)]
[Unit(task='gsm8k', question_id='q1', turn=1, repeat=0)]
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from specbench.record import Record

RECORDS_FILE = "records.jsonl"
MANIFEST_FILE = "manifest.json"


def read_records(run_dir: str | Path) -> list[Record]:
    """All complete records of a run (a torn last line from an interrupted write is ignored)."""
    path = Path(run_dir) / RECORDS_FILE
    if not path.is_file():
        return []
    out: list[Record] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            try:
                out.append(Record.from_json(data))
            except ValueError as e:
                raise ValueError(f"{path}: {e}") from None
    return out


def write_records(path: str | Path, records: list[Record]) -> None:
    """Write ``records`` as a fresh JSONL file (merging shards)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(_line(r))


def _line(rec: Record) -> str:
    return json.dumps(rec.to_json(), separators=(",", ":")) + "\n"


class RecordWriter:
    """Appends records as JSON lines, flushed and fsynced one by one so an interruption loses nothing."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / RECORDS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_torn_tail()
        self._fh = self.path.open("a", encoding="utf-8")

    def _repair_torn_tail(self) -> None:
        # a killed writer can leave a partial last line; cut it so appends start on a fresh line
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        data = self.path.read_bytes()
        if data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        with self.path.open("r+b") as fh:
            fh.truncate(cut)

    def write(self, rec: Record) -> None:
        self._fh.write(_line(rec))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"not a run folder (no {MANIFEST_FILE}): {run_dir}")
    return json.loads(path.read_text())
