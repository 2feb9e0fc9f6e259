"""Filling any config dataclass from strings, dicts and YAML (CLI ``--method-opt``, ``--config`` files).

Values are coerced to the field's type with one-line ``ConfigError`` messages naming the key; unknown
keys are refused; a dataclass with a ``validate()`` method is validated once built.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class PLD:
...     num_draft: int = 10
...     max_ngram: int = 3
>>> from_dict(PLD, {"num_draft": "5"})
PLD(num_draft=5, max_ngram=3)
>>> from_dict(PLD, {"ngram": 2}, where="pld.")
Traceback (most recent call last):
...
specbench.errors.ConfigError: pld: unknown key(s) ngram (known: max_ngram, num_draft)
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from specbench.errors import ConfigError
from specbench.files.safe_yaml import YamlLimitError, load_limited

C = TypeVar("C")


def parse_settings(pairs: list[str] | None) -> dict[str, str]:
    """Repeated ``--set KEY=VALUE`` options as a dict; a malformed pair is a ValueError.

    >>> parse_settings(["k=5000", "m = 10"])
    {'k': '5000', 'm': '10'}
    """
    out: dict[str, str] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _coerce(name: str, value: Any, typ: Any) -> Any:
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        for i, arg in enumerate(args):  # the first member that reads the value wins (float | str: "0.4" is 0.4)
            try:
                return _coerce(name, value, arg)
            except ConfigError:
                if i == len(args) - 1:
                    raise
    if value is None:
        raise ConfigError(f"{name}: must not be null")
    if typ in (int, float) and isinstance(value, bool):
        raise ConfigError(f"{name}: expected {typ.__name__}, got {value!r}")
    if typ is int and isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"{name}: expected an integer, got {value!r}")
    if origin is dict and not isinstance(value, dict):
        raise ConfigError(f"{name}: expected a mapping, got {value!r}")
    if origin in (tuple, list):
        if not isinstance(value, (str, list, tuple)):
            raise ConfigError(f"{name}: expected a list or a comma-separated string, got {short_repr(value)}")
        (inner, *_) = typing.get_args(typ) or (str,)
        items = value.split(",") if isinstance(value, str) else list(value)
        out = [_coerce(name, v, inner) for v in items if v != ""]
        return tuple(out) if origin is tuple else out
    try:
        if typ is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            if not isinstance(value, (bool, int)):
                raise ValueError(value)
            return bool(value)
        if typ is str and not isinstance(value, (str, int, float)):
            raise ValueError(value)  # a list or mapping where one name belongs
        if typ in (int, float, str):
            out = typ(value)
            if typ is float and not math.isfinite(out):
                raise ConfigError(f"{name}: expected a finite number, got {value!r}")
            if typ is str and "\x00" in out:
                raise ConfigError(f"{name}: contains a NUL character")
            return out
    except (TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"{name}: cannot read {short_repr(value)} as {typ.__name__}") from None
    return value


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to 60 characters (a YAML value may be a huge structure)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def from_dict(cls: type[C], values: dict[str, Any], where: str = "") -> C:
    """Build dataclass ``cls`` from ``values``, coercing strings; unknown keys raise ConfigError."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"{where.rstrip('.') or cls.__name__}: unknown key(s) {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(names))})")
    kwargs = {k: _coerce(f"{where}{k}", v, hints[k]) for k, v in values.items()}
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        validate()
    return obj


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; a clear ConfigError when missing or not a mapping."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {p}")
    try:
        data = load_limited(p.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    except YamlLimitError as e:
        raise ConfigError(f"{p}: refused ({e})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: invalid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level")
    return data
