r"""A table as plain data: display strings plus numeric sort keys (rendered to markdown or HTML elsewhere), and
the one escaping every markdown output uses for text it did not write itself (task categories, question ids,
model and hardware names from a run folder or an imported answer file).

Markdown tables break on ``|`` and newlines, and markdown rendered with HTML on runs a ``<script>`` it
contains, so a cell goes through ``md_text`` (``|``, newlines, ``<``, ``>``, ``&``, backticks) and a line
that keeps its own markdown (a footer with a command in backticks) through ``html_text`` (newlines, ``<``,
``>``, ``&``). The HTML leaderboard escapes through ``html_escape``. All three, and ``escaped_tabulate`` in
every format (a terminal's too), first show invisible characters through ``visible``: a bidi control (U+202E
reverses the text after it) or a zero-width space in a task id or category would otherwise reorder or hide
what a reader sees.

>>> t = Table("Speedup", ["method", "GSM8K"], [["pld", "1.42x"]], [["pld", 1.42]])
>>> t.rows[0][1]
'1.42x'
>>> md_text("a|b\n<script>x</script>")
'a\\|b &lt;script&gt;x&lt;/script&gt;'
>>> print(visible("gsm\u202e8k\u200b"), html_escape("<b>\u2066"))
gsm\u202e8k\u200b &lt;b&gt;\u2066
>>> print(escaped_tabulate([["pld", "1.42x"]], headers=["method", "a|b"], tablefmt="github"))
| method   | a\|b   |
|----------|--------|
| pld      | 1.42x  |
"""
from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Sequence

from tabulate import tabulate

MARKDOWN_FORMATS = ("github", "pipe")  # the tabulate formats that are markdown (others are plain text)
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_CELL = {**_HTML, "|": "\\|", "`": "\\`"}
_NEWLINES = re.compile(r"\s*[\r\n]+\s*")
# Unicode's control, format (bidi controls, zero-width characters), surrogate and line/paragraph separator
# categories: characters that change or hide the text around them instead of showing themselves
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _shown(c: str) -> str:
    if unicodedata.category(c) not in _INVISIBLE:
        return c
    return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"


def visible(text: Any) -> str:
    """``text`` with every invisible or control character written as its Python escape (``\\u202e``)."""
    text = str(text)
    return text if text.isprintable() else "".join(map(_shown, text))


def visible_lines(text: str) -> str:
    """``visible`` of each line of ``text`` (its newlines kept)."""
    return "\n".join(map(visible, text.split("\n")))


def html_escape(text: Any) -> str:
    """``html.escape`` of ``visible(text)``: the HTML leaderboard's escaping of text it did not write."""
    return html.escape(visible(text))


def html_text(text: Any) -> str:
    """``text`` on one line with ``<``, ``>`` and ``&`` as entities: nothing in it is HTML any more, its own
    markdown (code spans, emphasis) stays."""
    return "".join(_HTML.get(c, c) for c in visible(_NEWLINES.sub(" ", str(text))))


def md_text(text: Any) -> str:
    """``text`` safe as one markdown table cell: ``html_text`` plus ``|`` and backticks escaped."""
    return "".join(_CELL.get(c, c) for c in visible(_NEWLINES.sub(" ", str(text))))


def escaped_tabulate(rows: Sequence[Sequence[Any]], headers: Sequence[Any] = (), tablefmt: str = "github",
                     **kwargs: Any) -> str:
    """``tabulate`` with every text header and cell through ``md_text`` when the format is markdown, else
    through ``visible`` line by line (numbers stay numbers, for tabulate's alignment; a plain table's cell
    may span lines)."""
    shown = md_text if tablefmt in MARKDOWN_FORMATS else visible_lines
    rows = [[shown(c) if isinstance(c, str) else c for c in row] for row in rows]
    headers = headers if isinstance(headers, str) else [shown(h) for h in headers]  # ("keys": tabulate's)
    return tabulate(rows, headers=headers, tablefmt=tablefmt, **kwargs)


@dataclass
class Table:
    """A table of display strings plus numeric sort keys (None sorts last)."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    keys: list[list[float | str | None]]
