"""Number cells of report and leaderboard tables.

>>> fmt_num(1.234), fmt_num(0.5, "{:.1%}"), fmt_num(None), fmt_num(float("nan"))
('1.23', '50.0%', '-', '-')
"""
from __future__ import annotations


def fmt_num(value: float | None, fmt: str = "{:.2f}") -> str:
    """``value`` through ``fmt``; ``-`` for a missing value or NaN (an empty denominator)."""
    return "-" if value is None or value != value else fmt.format(value)
