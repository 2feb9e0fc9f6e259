r"""A table as plain data: display strings plus numeric sort keys (rendered to markdown or HTML elsewhere), and
the one escaping every markdown output uses for text it did not write itself (task categories, question ids,
model and hardware names from a run folder or an imported answer file).

Markdown tables break on ``|`` and newlines, and markdown rendered with HTML on runs a ``<script>`` it
contains, so a cell goes through ``md_text`` (``|``, newlines, ``<``, ``>``, ``&``, backticks) and a line
that keeps its own markdown (a footer with a command in backticks) through ``html_text`` (newlines, ``<``,
``>``, ``&``). The HTML leaderboard escapes on its own (``html.escape``).

>>> t = Table("Speedup", ["method", "GSM8K"], [["pld", "1.42x"]], [["pld", 1.42]])
>>> t.rows[0][1]
'1.42x'
>>> md_text("a|b\n<script>x</script>")
'a\\|b &lt;script&gt;x&lt;/script&gt;'
>>> print(escaped_tabulate([["pld", "1.42x"]], headers=["method", "a|b"], tablefmt="github"))
| method   | a\|b   |
|----------|--------|
| pld      | 1.42x  |
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from tabulate import tabulate

MARKDOWN_FORMATS = ("github", "pipe")  # the tabulate formats that are markdown (others are plain text)
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_CELL = {**_HTML, "|": "\\|", "`": "\\`"}
_NEWLINES = re.compile(r"\s*[\r\n]+\s*")


def html_text(text: Any) -> str:
    """``text`` on one line with ``<``, ``>`` and ``&`` as entities: nothing in it is HTML any more, its own
    markdown (code spans, emphasis) stays."""
    return "".join(_HTML.get(c, c) for c in _NEWLINES.sub(" ", str(text)))


def md_text(text: Any) -> str:
    """``text`` safe as one markdown table cell: ``html_text`` plus ``|`` and backticks escaped."""
    return "".join(_CELL.get(c, c) for c in _NEWLINES.sub(" ", str(text)))


def escaped_tabulate(rows: Sequence[Sequence[Any]], headers: Sequence[Any] = (), tablefmt: str = "github",
                     **kwargs: Any) -> str:
    """``tabulate`` with every text header and cell through ``md_text`` when the format is markdown (numbers
    stay numbers, for tabulate's alignment)."""
    if tablefmt in MARKDOWN_FORMATS:
        rows = [[md_text(c) if isinstance(c, str) else c for c in row] for row in rows]
        headers = headers if isinstance(headers, str) else [md_text(h) for h in headers]  # ("keys": tabulate's)
    return tabulate(rows, headers=headers, tablefmt=tablefmt, **kwargs)


@dataclass
class Table:
    """A table of display strings plus numeric sort keys (None sorts last)."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    keys: list[list[float | str | None]]
