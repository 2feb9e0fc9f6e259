"""A table as plain data: display strings plus numeric sort keys (rendered to markdown or HTML elsewhere).

>>> t = Table("Speedup", ["method", "GSM8K"], [["pld", "1.42x"]], [["pld", 1.42]])
>>> t.rows[0][1]
'1.42x'
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Table:
    """A table of display strings plus numeric sort keys (None sorts last)."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    keys: list[list[float | str | None]]
