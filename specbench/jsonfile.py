"""Small JSON artefacts (golden files, profiles) written whole and read back with a schema check."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from specbench.config import ConfigError


def save_json(data: dict[str, Any], path: str | Path, indent: int | None = None) -> None:
    """Write ``data`` to ``path`` (parents created)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    seps = (",", ":") if indent is None else None
    p.write_text(json.dumps(data, indent=indent, separators=seps) + "\n")


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
    specbench.config.ConfigError: a.jsonl:3: expected a JSON object, got list
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
