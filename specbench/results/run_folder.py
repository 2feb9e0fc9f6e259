"""A run folder's files: append-only ``records.jsonl`` (one ``Record`` a line) and ``manifest.json``.

>>> import tempfile
>>> from specbench.results.record import Record
>>> d = tempfile.mkdtemp()
>>> with RecordWriter(d) as w:
...     w.write(Record("ar", "gsm8k", "GSM8K", "1", "q1", "", 1, 0, 3, 1, 0.1, 1, 0.0, 0.1, [1], [0], [0.0], [9]))
>>> [r.unit for r in read_records(d)]
[Unit(task='gsm8k', question_id='q1', turn=1, repeat=0, batch=1)]
"""
from __future__ import annotations

import dataclasses
import errno
import math
import os
import stat
from pathlib import Path
from typing import Any

from specbench.errors import UserError, writing
from specbench.files.jsonfile import json_object, read_json, strict_json, write_text_atomic
from specbench.results.record import Record
from specbench.results.record_consistency import record_problem

RECORDS_FILE = "records.jsonl"
MANIFEST_FILE = "manifest.json"
PROFILE_FILE = "profile.json"  # the cost profile budget=auto used (runs with an auto method only)
BATCH_PROFILE_FILE = "batch_profile.json"  # its batched forwards' costs (budget=auto at --batch-size above 1)
LOCK_FILE = ".specbench.lock"  # held by the process writing the run (``run.lock``); readers ask ``progress``
# the manifest's note of a unit the run stopped at because it can never run (its prompt past the context:
# ``run/context_fit.py``): ``{"unit": ..., "reason": ...}``; ``check`` then suggests no resume
UNRUNNABLE = "unrunnable"


# the manifest keys readers look into, and their JSON types (None is allowed for each: older manifests)
MANIFEST_TYPES: dict[str, type | tuple[type, ...]] = {
    **dict.fromkeys(("config", "model", "hardware", "versions", "questions", "turns", "task_versions", "subtasks",
                     "method_configs", "artifacts", "sampling", "backend", "imported", "cost_profile", "context_lengths",
                     "machine_state", UNRUNNABLE), dict),
    **dict.fromkeys(("resumed", "merged_from", "shard", "verified_files"), list),
    **dict.fromkeys(("run_name", "config_digest", "timestamp", "command", "git_commit"), str),
}
MANIFEST_KIND_NAMES = {dict: "an object", list: "a list", str: "a string"}


class RunFileError(UserError):
    """A run folder's file is damaged: the message names the file and line (one-line CLI error)."""


def _not_own_file(path: Path, st: os.stat_result) -> str | None:
    """Why the file ``st`` describes is not one a run may write, or None (a regular file with one name)."""
    fix = "delete it, or pick another --run-name"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link; a run folder's files must be regular files the run wrote ({fix})"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file; a run folder's files must be regular files the run wrote ({fix})"
    if st.st_nlink > 1:  # appending or truncating would change the file under its other names too
        return f"{path} has {st.st_nlink} hard links; a run folder's files must be the run's own ({fix})"
    return None


def check_run_file(path: str | Path) -> None:
    """``path`` is absent or a regular file with one name, else a one-line ``RunFileError``: a run never writes
    through a link, so a ``records.jsonl`` pointing at a file elsewhere (a token file) is never cut or appended to.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> check_run_file(d / RECORDS_FILE)  # absent: fine
    >>> (d / RECORDS_FILE).symlink_to(d / "elsewhere")
    >>> check_run_file(d / RECORDS_FILE)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    specbench.results.run_folder.RunFileError: .../records.jsonl is a symbolic link; a run folder's files must be ...
    """
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    problem = _not_own_file(Path(path), st)
    if problem:
        raise RunFileError(problem)


def open_run_file(path: Path, flags: int) -> int:
    """A descriptor of the run file ``path`` (created when absent) opened with ``flags``, after
    ``check_run_file``; the open itself follows no link and blocks on no FIFO, and the opened file is checked
    again, so a link put in place between the check and the open is refused too."""
    check_run_file(path)
    try:  # (O_NONBLOCK: a FIFO swapped in would block the open; a regular file ignores the flag)
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO):
            check_run_file(path)
        raise
    problem = _not_own_file(path, os.fstat(fd))
    if problem:
        os.close(fd)
        raise RunFileError(problem)
    return fd


# the per-forward-pass lists of schema 4: the latency and per-position statistics index them together
PER_PASS_FIELDS = ("verify_times_s", "step_times_s", "draft_depths", "aux_sizes")
TOKEN_FIELDS = ("output_ids",)  # integers only; other counts were always read as numbers (imports write floats)


def _is_number(value: Any, integer: bool = False) -> bool:
    """An int (never a bool), or for ``integer=False`` also a finite float (JSON has no NaN; Python's reads it)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (not integer and isinstance(value, float) and math.isfinite(value))


def _check_types(rec: Record) -> None:
    # JSON gives any type; a string where a number belongs would otherwise surface as a traceback in stats,
    # a token id of 10^30 or -1 as a crash in the tokenizer, an Infinity as a meaningless figure
    for f in dataclasses.fields(rec):
        value = getattr(rec, f.name)
        kind, optional = str(f.type), False
        if kind.endswith(" | None"):
            kind, optional = kind[: -len(" | None")], True
        if optional and value is None:
            continue
        if kind in ("int", "float") and not _is_number(value):
            raise ValueError(f"field {f.name!r} must be a finite number, got {value!r}")
        if kind == "str" and not isinstance(value, str):
            raise ValueError(f"field {f.name!r} must be a string, got {value!r}")
        if kind.startswith("dict[") and not isinstance(value, dict):
            raise ValueError(f"field {f.name!r} must be an object, got {value!r}")
        if kind.startswith("list["):
            if not isinstance(value, list):
                raise ValueError(f"field {f.name!r} must be a list, got {value!r}")
            integer = f.name in TOKEN_FIELDS
            bad = [v for v in value if not _is_number(v, integer)]
            if bad:
                raise ValueError(f"field {f.name!r} must hold {'integers' if integer else 'finite numbers'} only, "
                                 f"got {bad[0]!r}")
        if f.name in PER_PASS_FIELDS and value is not None and len(value) != len(rec.accept_lengths):
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
    # (a negative or impossible time, or counts and times that disagree, would become a speedup)
    problem = record_problem(rec)
    if problem:
        raise ValueError(problem)
    return rec


def read_numbered_records(run_dir: str | Path) -> list[tuple[int, Record]]:
    """(line number, record) of every record of a run. A torn last line (an interrupted write) is ignored;
    any other bad line raises ``RunFileError`` naming the file and line number."""
    path = Path(run_dir) / RECORDS_FILE
    if not path.is_file():
        return []
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError:
        raise RunFileError(f"{path}: not UTF-8 text") from None
    out: list[tuple[int, Record]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append((number, parse_record_line(line)))
        except ValueError as e:
            torn = number == len(lines)  # no newline after it: the writer was interrupted mid-line
            if torn and str(e).startswith("malformed JSON"):
                continue
            raise RunFileError(f"{path}:{number}: {e}") from None
    return out


def read_records(run_dir: str | Path) -> list[Record]:
    """All records of a run, each checked on its own (``read_numbered_records``); readers that pool them
    check them against the manifest too (``specbench.results.validation``)."""
    return [rec for _, rec in read_numbered_records(run_dir)]


def write_records(path: str | Path, records: list[Record]) -> None:
    """Write ``records`` as a fresh JSONL file (merging shards), atomically."""
    write_text_atomic(path, "".join(_line(r) for r in records))


def _line(rec: Record) -> str:
    return strict_json(rec.to_json(), compact=True) + "\n"


class RecordWriter:
    """Appends records as JSON lines, each written whole and fsynced, so an interruption loses nothing; a
    full disk is a one-line ``WriteError`` (the records before it stay, a torn line is cut on resume)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / RECORDS_FILE
        with writing(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = open_run_file(self.path, os.O_RDWR | os.O_APPEND)  # (a link is refused before any cut)
            try:
                self._repair_torn_tail()
            except OSError:
                os.close(self._fd)
                raise

    def _repair_torn_tail(self) -> None:
        # a killed writer (or a full disk) can leave a partial last line; cut it so appends start on a fresh line
        size = os.fstat(self._fd).st_size
        if size == 0:
            return
        data = os.pread(self._fd, size, 0)
        if data.endswith(b"\n"):
            return
        os.ftruncate(self._fd, data.rfind(b"\n") + 1)

    def write(self, rec: Record) -> None:
        data = memoryview(_line(rec).encode("utf-8"))
        with writing(self.path):
            while data:
                data = data[os.write(self._fd, data):]
            os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    """The run's manifest, checked before any reader looks into it: strict JSON (a NaN or Infinity would reach
    the report's figures and crash its strict ``summary.json``), the types of the keys readers index, and a
    ``config`` naming the run's ``methods`` (what its records are checked against); else a ``RunFileError``."""
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"not a run folder (no {MANIFEST_FILE}): {run_dir}")
    data = read_json(path, "valid manifest", RunFileError, finite=True)
    for key, kinds in MANIFEST_TYPES.items():  # readers index these: a list there would be a traceback
        if data.get(key) is not None and not isinstance(data[key], kinds):
            raise RunFileError(f"{path}: not a valid manifest ({key!r} must be {MANIFEST_KIND_NAMES[kinds]}, "
                               f"got {type(data[key]).__name__})")
    nested = [(f"config.{k}", (data.get("config") or {}).get(k)) for k in ("methods", "tasks")]
    nested += [(f"questions.{t}", ids) for t, ids in (data.get("questions") or {}).items()]
    for name, value in nested:
        if value is not None and not isinstance(value, list):
            raise RunFileError(f"{path}: not a valid manifest ({name!r} must be a list, got {type(value).__name__})")
    if data.get("config") is None:
        raise RunFileError(f"{path}: not a valid manifest (missing its 'config': the run's settings)")
    if data["config"].get("methods") is None:
        raise RunFileError(f"{path}: not a valid manifest (missing 'config.methods': the run's methods)")
    return data
