"""Small JSON artefacts (golden files, profiles, manifests) written whole, as strict UTF-8 JSON, and read back with a
schema check."""
from __future__ import annotations

import errno
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

from specbench.errors import WRITE_ERRNOS, ConfigError, WriteError, writing


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


def check_no_folder_in_the_way(folder: Path, names: Iterable[str]) -> None:
    """A one-line ``WriteError`` naming the first ``folder/NAME`` that is a folder (or a link to one), checked
    before any is written: a refused command leaves no set of files half-replaced."""
    for name in names:
        if (folder / name).is_dir():
            raise WriteError(f"{WRITE_ERRNOS[errno.EISDIR]} while writing {folder / name}; move it, or pick "
                             "another --out")


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
    data = read_json(path, what)
    if data.get("schema") != schema or required not in data:
        raise ConfigError(f"{path}: not a {what} (schema {schema})")
    return data


def _refuse_constant(name: str) -> Any:
    # json calls this for NaN, Infinity and -Infinity, which Python writes and reads but strict JSON has not
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str | bytes, finite: bool = False) -> Any:
    """``json.loads`` whose every failure is a one-line ValueError: malformed JSON, nesting deeper than Python
    recurses (``[`` 100,000 times is a RecursionError inside json), and with ``finite`` NaN / Infinity.

    >>> parse_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> parse_json("[" * 100000)
    Traceback (most recent call last):
    ...
    ValueError: JSON nested too deeply to read
    >>> parse_json('{"t": NaN}', finite=True)
    Traceback (most recent call last):
    ...
    ValueError: NaN is not a number JSON allows
    """
    try:
        return json.loads(text, parse_constant=_refuse_constant if finite else None)
    except json.JSONDecodeError as e:
        raise ValueError(f"malformed JSON ({e.msg})") from None
    except RecursionError:  # (the stack is unwound by now: catching it is safe)
        raise ValueError("JSON nested too deeply to read") from None


def read_json(path: str | Path, what: str, error: type[Exception] = ConfigError, kind: type = dict,
              finite: bool = False) -> Any:
    """The JSON value of file ``path``, of type ``kind``; a missing file is FileNotFoundError, anything else
    wrong ``error("PATH: not a WHAT (why)")``: not UTF-8, malformed, nested too deeply, the wrong type, and
    with ``finite`` NaN / Infinity. Every JSON file a user hands in (or may have edited) is read through here.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "c.json"
    >>> _ = p.write_text("[1]")
    >>> read_json(p, "config")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    specbench.errors.ConfigError: .../c.json: not a config (expected a JSON object, got list)
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    try:
        data = parse_json(p.read_text(encoding="utf-8"), finite)
    except UnicodeDecodeError:
        raise error(f"{path}: not a {what} (not UTF-8 text)") from None
    except ValueError as e:
        raise error(f"{path}: not a {what} ({e})") from None
    if not isinstance(data, kind):
        raise error(f"{path}: not a {what} (expected {_KIND_NAMES.get(kind, kind.__name__)}, got {type(data).__name__})")
    return data


_KIND_NAMES = {dict: "a JSON object", list: "a JSON list"}


def parse_jsonl(where: str, lines: Iterable[str], error: type[Exception] = ConfigError) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for each non-blank line; a line that is not a JSON object raises
    ``error("where:line: ...")``.

    >>> parse_jsonl("a.jsonl", ['{"x": 1}', "", "[2]"])
    Traceback (most recent call last):
    ...
    specbench.errors.ConfigError: a.jsonl:3: expected a JSON object, got list
    """
    return list(iter_jsonl(where, lines, error))


def iter_jsonl(where: str, lines: Iterable[str], error: type[Exception] = ConfigError) -> Iterator[tuple[int, dict[str, Any]]]:
    """``parse_jsonl`` one line at a time, for files too large to hold (a gzipped corpus)."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json_object(line)
        except ValueError as e:
            raise error(f"{where}:{n}: {e}") from None
        yield n, row


def json_object(line: str) -> dict[str, Any]:
    """One JSON object; ValueError ("malformed JSON (...)", "JSON nested too deeply to read", "expected a JSON
    object, got list") otherwise."""
    row = parse_json(line)
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    return row
