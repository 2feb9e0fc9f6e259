"""Result records: append-only JSONL, one record per (method, task, question, turn, repeat).

Record fields (``SCHEMA_VERSION`` 1):
- identity: ``schema_version, method, task, subtask, task_version, question_id, category, turn`` (1-based),
  ``repeat`` (0-based)
- work: ``prompt_tokens, new_tokens, output_ids``
- timing: ``wall_time_s`` (whole generation incl. prefill, tokenisation excluded), ``draft_time_s``,
  ``verify_time_s``
- per forward pass (prefill included, same length): ``accept_lengths`` (tokens emitted: accepted draft
  tokens + 1; AR is all ones; sum == new_tokens), ``draft_sizes`` (tree nodes), ``draft_times_s``
- ``forward_passes`` == len(accept_lengths)
- lossless check vs the AR record of the same question/turn/repeat 0: ``lossless`` (bool, null for AR),
  ``lossless_class`` ("exact" | "tie" | "mismatch", null for AR), ``first_divergence`` (index or null),
  ``ar_margin`` (relative top-2 logit margin of AR at the divergence, or null)
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

SCHEMA_VERSION = 1
RECORDS_FILE = "records.jsonl"
MANIFEST_FILE = "manifest.json"


def record_key(rec: dict[str, Any]) -> tuple:
    """Identity of a record; a resumed run skips keys already present."""
    return (rec["method"], rec["task"], str(rec["question_id"]), int(rec["turn"]), int(rec["repeat"]))


def read_records(run_dir: str | Path) -> list[dict[str, Any]]:
    """All complete records of a run (a torn last line from an interrupted write is ignored)."""
    path = Path(run_dir) / RECORDS_FILE
    if not path.is_file():
        return []
    out: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec.get("schema_version") != SCHEMA_VERSION:
                raise ValueError(f"{path}: record schema_version {rec.get('schema_version')} != {SCHEMA_VERSION}")
            out.append(rec)
    return out


def iter_records(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    yield from read_records(run_dir)


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

    def write(self, rec: dict[str, Any]) -> None:
        rec = {"schema_version": SCHEMA_VERSION, **rec}
        self._fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
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
