"""One whitelist for every name that becomes part of a path: run names, method labels, imported method
names, shard names, exported file names.

A **safe name** is 1-200 characters of ``[A-Za-z0-9._-]`` that does not start with ``.`` (so never ``.``,
``..``, a hidden file, nor a temporary sibling ``.NAME.tmp-PID``). A **method label** is ``NAME``,
``NAME@VARIANT`` or ``engine:NAME[@VARIANT]``, its name a safe name and its variant letters, digits,
``_`` and ``-``. ``inside(folder, name)`` is the one way to put such a name under a folder: it refuses a
name that is not safe, and a path that resolves outside the folder (a symlink planted there).

>>> is_safe_name("my-run_2.1"), is_safe_name("../x"), is_safe_name("/tmp/x"), is_safe_name(".."), is_safe_name(".x")
(True, False, False, False, False)
>>> is_safe_label("rest@auto"), is_safe_label("engine:ngram"), is_safe_label("x/../../../../escaped")
(True, True, False)
>>> check_label("x/../escaped", "imported method")
Traceback (most recent call last):
...
specbench.errors.ConfigError: imported method 'x/../escaped' is not a method label (NAME, NAME@VARIANT or engine:NAME[@VARIANT]; a name is 1-200 letters, digits, '.', '_', '-', not starting with '.')
>>> inside(Path("out"), "pld-float16.jsonl")
PosixPath('out/pld-float16.jsonl')
"""
from __future__ import annotations

import re
from pathlib import Path

from specbench.errors import ConfigError

MAX_NAME = 200  # characters of a run or folder name (file systems allow 255 bytes; room for suffixes)
ENGINE_PREFIX = "engine:"  # (catalog.py's, repeated: files/ sits below the catalog)

_NAME = r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,%d}" % (MAX_NAME - 1)
_VARIANT = r"[A-Za-z0-9_-]+"
_LABEL = re.compile(rf"(?:{re.escape(ENGINE_PREFIX)})?{_NAME}(?:@{_VARIANT})?")

NAME_RULE = f"1-{MAX_NAME} letters, digits, '.', '_', '-', not starting with '.'"
LABEL_RULE = f"NAME, NAME@VARIANT or {ENGINE_PREFIX}NAME[@VARIANT]; a name is {NAME_RULE}"


def is_safe_name(name: object) -> bool:
    """Whether ``name`` is one path component that cannot leave its folder nor hide in it."""
    return isinstance(name, str) and re.fullmatch(_NAME, name) is not None


def is_safe_variant(variant: str) -> bool:
    """The part of a label after ``@``: ``auto``, ``k2``, ``5x5``."""
    return re.fullmatch(_VARIANT, variant) is not None


def is_safe_label(label: object) -> bool:
    """Whether ``label`` is a method label whose every part is safe in a path (``:`` and ``@`` included:
    run folders replace the first, and neither can climb out of a folder)."""
    return isinstance(label, str) and len(label) <= MAX_NAME and _LABEL.fullmatch(label) is not None


def check_name(name: object, what: str) -> str:
    """``name`` if it is a safe name, else a one-line ConfigError naming ``what`` it is."""
    if not is_safe_name(name):
        raise ConfigError(f"{what} {_shown(name)} is not a safe name ({NAME_RULE})")
    return str(name)


def check_label(label: object, what: str = "method label") -> str:
    """``label`` if it is a safe method label, else a one-line ConfigError."""
    if not is_safe_label(label):
        raise ConfigError(f"{what} {_shown(label)} is not a method label ({LABEL_RULE})")
    return str(label)


def inside(folder: str | Path, name: str, what: str = "file name") -> Path:
    """``folder / name`` once ``name`` is a safe name and the path, resolved (symlinks followed), is still
    directly in ``folder``; otherwise a one-line ConfigError, before anything is written."""
    check_name(name, what)
    base = Path(folder).resolve()
    if (base / name).resolve().parent != base:  # (a symlink named ``name`` pointing elsewhere)
        raise ConfigError(f"{what} {name!r} resolves outside {folder}; remove that link or pick another folder")
    return Path(folder) / name


def _shown(value: object) -> str:
    """The refused value in one short line (a hostile name may be long or hold newlines)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
