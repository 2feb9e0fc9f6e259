"""Reading question files line by line with one-line errors (``path:line: what is wrong``).

Shared by Spec-Bench's ``question.jsonl`` loader and ``--tasks jsonl:PATH``.

>>> parse_jsonl("q.jsonl", ['{"id": 1, "turns": ["Hi"]}', "", '{"id": 2'])
Traceback (most recent call last):
...
specbench.errors.TaskDataError: q.jsonl:3: malformed JSON (Expecting ',' delimiter)
>>> question_turns("q.jsonl", 1, {"turns": ["Hi", "And?"]})
('Hi', 'And?')
"""
from __future__ import annotations

import stat
from pathlib import Path
from typing import Any, Iterable

from specbench.api import TaskDataError
from specbench.api import parse_jsonl as parse_json_lines


# what a path that exists but is no regular file is, in words (``stat``'s file types)
KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_question_file(path: Path) -> None:
    """``path`` is a regular file (a link to one included), else a one-line ``TaskDataError`` saying what it is:
    missing, or a FIFO, a device, a folder (reading a FIFO would wait for a writer, a device for ever).

    >>> check_question_file(Path("/dev/null"))
    Traceback (most recent call last):
    ...
    specbench.errors.TaskDataError: question file /dev/null is a character device, not a regular file
    """
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise TaskDataError(f"question file not found: {path}") from None
    except OSError as e:
        raise TaskDataError(f"question file {path} cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in KINDS if test(mode)), "not a file")
        raise TaskDataError(f"question file {path} is {kind}, not a regular file")


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file; a missing file, one that is no regular file or other encoding is a
    ``TaskDataError``."""
    check_question_file(path)
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise TaskDataError(f"{path}: not UTF-8 text (byte {e.start})") from None


def parse_jsonl(where: str, lines: Iterable[str]) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for every non-blank line; anything but a JSON object raises."""
    return parse_json_lines(where, lines, TaskDataError)


def question_turns(where: str, n: int, row: dict[str, Any]) -> tuple[str, ...]:
    """The row's ``turns``: a non-empty list of non-empty strings."""
    turns = row.get("turns")
    if "turns" not in row:
        raise TaskDataError(f"{where}:{n}: missing 'turns' (a list of user messages)")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
        raise TaskDataError(f"{where}:{n}: 'turns' must be a non-empty list of strings")
    return tuple(turns)
