"""Small JSON artefacts (golden files, profiles, manifests) written whole, as strict UTF-8 JSON, and read back with a
schema check."""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Iterable

from specbench.errors import ConfigError, WriteError, writing


def finite(value: Any) -> Any:
    """``value`` with every NaN / infinity replaced by None: strict JSON has neither.

    >>> finite({"a": float("nan"), "b": [1.5, float("inf")]})
    {'a': None, 'b': [1.5, None]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def strict_json(data: Any, indent: int | None = None, compact: bool = False, sort_keys: bool = False,
                ensure_ascii: bool = True) -> str:
    """JSON that strict parsers accept (NaN / Infinity written as null; anything else non-JSON as its ``str``)."""
    seps = (",", ":") if compact else None
    return json.dumps(finite(data), indent=indent, separators=seps, allow_nan=False, default=str, sort_keys=sort_keys,
                      ensure_ascii=ensure_ascii)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` through a temporary sibling renamed over it, so readers never see a
    half-written file; a full or read-only disk is a one-line ``WriteError`` naming ``path``."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    with writing(p):
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(p)
        finally:
            tmp.unlink(missing_ok=True)


def write_json_atomic(path: str | Path, data: Any, indent: int | None = None) -> None:
    """``write_text_atomic`` of ``strict_json(data)``."""
    write_text_atomic(path, strict_json(data, indent) + "\n")


def write_outputs(folder: Path, files: dict[str, str]) -> list[str]:
    """Write each file (UTF-8, atomically); a folder that cannot be written (read-only, full) only costs the
    files: what was not written is said on stderr and returned, the caller prints its text anyway."""
    failed, why = [], ""
    try:
        with writing(folder):
            folder.mkdir(parents=True, exist_ok=True)
    except WriteError as e:
        failed, why = list(files), str(e).split(" while writing")[0]
        files = {}
    for name, text in files.items():
        try:
            write_text_atomic(folder / name, text)
        except WriteError as e:
            failed.append(name)
            why = str(e).split(" while writing")[0]
    if failed:
        print(f"[specbench] could not write {', '.join(failed)} in {folder} ({why}); printed only", file=sys.stderr)
    return failed


def save_json(data: dict[str, Any], path: str | Path, indent: int | None = None) -> None:
    """Write ``data`` to ``path`` (parents created) as strict UTF-8 JSON, atomically."""
    p = Path(path)
    with writing(p.parent):
        p.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(p, strict_json(data, indent, compact=indent is None) + "\n")


def load_json(path: str | Path, schema: int | str, required: str, what: str) -> dict[str, Any]:
    """Read a JSON object whose ``schema`` field equals ``schema`` and that has key ``required``.

    A missing file is FileNotFoundError, anything else wrong a ``ConfigError`` (a ValueError) naming ``what``.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a {what} (not UTF-8 text)") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not a {what} (invalid JSON: {e.msg})") from None
    if not isinstance(data, dict) or data.get("schema") != schema or required not in data:
        raise ConfigError(f"{path}: not a {what} (schema {schema})")
    return data


def parse_jsonl(where: str, lines: Iterable[str], error: type[Exception] = ConfigError) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for each non-blank line; a line that is not a JSON object raises
    ``error("where:line: ...")``.

    >>> parse_jsonl("a.jsonl", ['{"x": 1}', "", "[2]"])
    Traceback (most recent call last):
    ...
    specbench.errors.ConfigError: a.jsonl:3: expected a JSON object, got list
    """
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json_object(line)))
        except ValueError as e:
            raise error(f"{where}:{n}: {e}") from None
    return rows


def json_object(line: str) -> dict[str, Any]:
    """One JSON object; ValueError ("malformed JSON (...)" / "expected a JSON object, got list") otherwise."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"malformed JSON ({e.msg})") from None
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    return row
