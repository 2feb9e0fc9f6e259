"""The report's word on its own timings: how many speedup cells the plausibility rule looked at and which it found
implausible (``specbench.results.plausibility``), and which generations stalled and what cells they touched
(``specbench.results.stalls``). Tables mark such a cell ``(implausible)`` themselves (``Cell.speedup_text``).

>>> from types import SimpleNamespace as C
>>> parts = plausibility_parts({"pld": {"GSM8K": C(speedup=8.1, tau=1.0, tau_ceiling=1.0, wall_time_s=2.9)}})
>>> print(parts[0][:64])
Plausibility: 1 cell checked, 1 implausible (a speedup above the
>>> print(parts[1].splitlines()[-1][:41])
- pld on GSM8K: 8.10x at tau 1.00 exceeds
>>> judged = {"pld": {"GSM8K": C(implausible="pld on GSM8K: 8.10x ..."), "Overall": C(implausible=None)}}
>>> implausible_lines({"run-a": judged})
['run-a: pld on GSM8K: 8.10x ...']
"""
from __future__ import annotations

from typing import Any

from specbench.results.cell_flags import flag_notes
from specbench.results.plausibility import MARGIN, counts_line, judge
from specbench.results.stalls import stalled

DOC = "docs/how-it-measures.md, \"Implausible speedups and stalls\""


def plausibility_parts(stats: dict[str, dict[str, Any]]) -> list[str]:
    """The count line, and a section listing each implausible cell's reason when there is one."""
    verdicts = judge(stats)
    count = counts_line(verdicts)
    parts = [f"{count[0].upper()}{count[1:]} (a speedup above the most its tau allows, beyond a {MARGIN:.0%} margin "
             f"and the run's noise floor, is marked *(implausible)*: {DOC})."]
    bad = [v.reason() for v in verdicts if v.implausible]
    if bad:
        parts.append("### Implausible speedups\n\nThese cells read faster than their forward passes allow; they are "
                     "not results.\n\n" + "\n".join(f"- {r}" for r in bad))
    return parts


def implausible_lines(stats_by_run: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """``run: reason`` for every cell the rule marked in each run's judged ``run_stats`` (``compare`` and the
    leaderboard list them under their tables; the tables mark the cells)."""
    return [f"{run}: {c.implausible}" for run, stats in stats_by_run.items() for cells in stats.values()
            for c in cells.values() if getattr(c, "implausible", None)]


IMPLAUSIBLE_TITLE = "Implausible speedups (faster than their forward passes allow: not results)"
FLAGS_TITLE = "Flagged figures (not plain measurements; docs/how-it-measures.md, \"Flags\")"


def flag_lines(stats_by_run: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """``run: note`` for each flag but ``implausible`` (``implausible_lines``) on each run's cells
    (``results.cell_flags``: stalled, partial, forced merge, machine not idle); the tables mark the cells.

    >>> from types import SimpleNamespace as C
    >>> from specbench.results.cell_flags import Flag
    >>> flag_lines({"run-a": {"pld": {"GSM8K": C(flags=(Flag("partial", "partial: run-a holds 3 of 4"),))}}})
    ['run-a: partial: run-a holds 3 of 4']
    """
    return [f"{run}: {note}" for run, stats in stats_by_run.items() for note in flag_notes(stats)]


def stall_part(records: list[Any]) -> str | None:
    """A section naming each stalled generation, why, and the cells it touched (None: none stalled)."""
    found = stalled(records)
    if not found:
        return None
    return ("### Stalled generations\n\nThe process was stopped or starved during these generations; the cells "
            f"they touched carry that time ({DOC}).\n\n" + "\n".join(f"- {s.line()}" for s in found))
