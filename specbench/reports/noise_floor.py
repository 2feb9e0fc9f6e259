"""The noise floor of a run: what AR timed a second time (a label ``ar@NAME``) reads against AR.

Such a row runs the baseline's very loop, so its speedup cells differ from 1.00x only by the machine's drift
between two timings of the same computation. The report states their span under the speedup table, so a reader
can tell a method's small loss or gain from what this run could show at all (docs/how-it-measures.md, "The
noise floor").

>>> from types import SimpleNamespace as C
>>> twin = {"GSM8K": C(speedup=0.95), "Overall": C(speedup=0.99)}
>>> print(noise_floor_note({"ar": {}, "ar@twin": twin, "pld": {"GSM8K": C(speedup=1.4)}})[:80])
Noise floor: `ar@twin`, AR timed again on the same questions, reads 0.95x to 0.9
>>> noise_floor_note({"ar": {}, "pld": {}}) is None
True
"""
from __future__ import annotations

from typing import Any

from specbench.results.twin_rows import twin_labels


def noise_floor_note(stats: dict[str, dict[str, Any]]) -> str | None:
    """One line per twin row with the span of its speedup cells (None: the run has no twin row)."""
    lines = []
    for label in twin_labels(list(stats)):
        values = [c.speedup for c in stats[label].values() if c.speedup is not None]
        if values:
            lines.append(f"Noise floor: `{label}`, AR timed again on the same questions, reads {min(values):.2f}x to "
                         f"{max(values):.2f}x across its cells: a cell of another method that far from 1.00x differs "
                         "from AR by no more than identical computation does in this run.")
    return "\n\n".join(lines) or None
