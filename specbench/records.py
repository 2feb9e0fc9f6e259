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

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from specbench.errors import UserError
from specbench.jsonfile import json_object
from specbench.record import Record

RECORDS_FILE = "records.jsonl"
MANIFEST_FILE = "manifest.json"
PROFILE_FILE = "profile.json"  # the cost profile budget=auto used (runs with an auto method only)


class RunFileError(UserError):
    """A run folder's file is damaged: the message names the file and line (one-line CLI error)."""


# the per-forward-pass lists of schema 4: the latency and per-position statistics index them together
PER_PASS_FIELDS = ("verify_times_s", "step_times_s", "draft_depths", "aux_sizes")


def _check_types(rec: Record) -> None:
    # JSON gives any type; a string where a number belongs would otherwise surface as a traceback in stats
    for f in dataclasses.fields(rec):
        value = getattr(rec, f.name)
        kind, optional = str(f.type), False
        if kind.endswith(" | None"):
            kind, optional = kind[: -len(" | None")], True
        if optional and value is None:
            continue
        if kind in ("int", "float") and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"field {f.name!r} must be a number, got {value!r}")
        if kind == "str" and not isinstance(value, str):
            raise ValueError(f"field {f.name!r} must be a string, got {value!r}")
        if kind.startswith("list[") and not isinstance(value, list):
            raise ValueError(f"field {f.name!r} must be a list, got {value!r}")
        if f.name in PER_PASS_FIELDS and value is not None:
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
                raise ValueError(f"field {f.name!r} must hold numbers only")
            if len(value) != len(rec.accept_lengths):
                raise ValueError(f"field {f.name!r} has {len(value)} entries, expected one per forward pass "
                                 f"({len(rec.accept_lengths)})")


def parse_record_line(line: str) -> Record:
    """One JSONL line as a checked ``Record``; ValueError says what is wrong."""
    data = json_object(line)
    try:
        rec = Record.from_json(data)
    except (KeyError, TypeError) as e:
        raise ValueError(f"not a complete record ({e})") from None
    _check_types(rec)
    return rec


def read_records(run_dir: str | Path) -> list[Record]:
    """All records of a run. A torn last line (an interrupted write) is ignored; any other bad line raises
    ``RunFileError`` naming the file and line number."""
    path = Path(run_dir) / RECORDS_FILE
    if not path.is_file():
        return []
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError:
        raise RunFileError(f"{path}: not UTF-8 text") from None
    out: list[Record] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(parse_record_line(line))
        except ValueError as e:
            torn = number == len(lines)  # no newline after it: the writer was interrupted mid-line
            if torn and str(e).startswith("malformed JSON"):
                continue
            raise RunFileError(f"{path}:{number}: {e}") from None
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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RunFileError(f"{path}: not a valid manifest ({e})") from None
    if not isinstance(data, dict):
        raise RunFileError(f"{path}: not a valid manifest (expected a JSON object)")
    return data
