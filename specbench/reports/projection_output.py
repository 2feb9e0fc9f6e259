"""A projection written out as text, JSON and CSV; every projected figure carries the word "projected" and the
profile it used (machine, backend, dtype, date), so no output format can lose the label.

- text: a table per run, measured column first, then ``projected on <profile>`` columns whose every cell reads
  ``1.23x projected`` (``1.23x projected*`` for a best-fixed-budget-in-hindsight cell, explained below it); a
  figure carries its flags' marks (``results.cell_flags``: ``1.27x (stalled)``, ``1.51x projected (partial)``),
  their notes listed below;
- JSON: ``{"kind": "specbench projection", "profiles": [...], "rows": [{..., "projected": [{"kind": "projected",
  "profile": label, "speedup", "basis"}]}]}``;
- CSV: one line per figure (long form), ``kind`` ``measured`` or ``projected``, the profile's label and the
  figure's flags on each.

>>> from specbench.reports.projection_table import Projection, ProjectionRow, ProjectedCell
>>> class P:  # (a stand-in for ``OntoProfile``)
...     label = "Example CPU, fast 2 threads, float32, 2026-01-01"
...     def describe(self): return {"label": self.label}
>>> proj = Projection("demo", (P(),), (ProjectionRow("pld", "Overall", 1.5, (ProjectedCell(1.2, "recorded"),)),), ())
>>> print(projection_csv(proj).strip())
run,method,subtask,kind,profile,speedup,basis,flags
demo,pld,Overall,measured,,1.5000,this run's machine,
demo,pld,Overall,projected,"Example CPU, fast 2 threads, float32, 2026-01-01",1.2000,recorded,
"""
from __future__ import annotations

import csv
import io
from typing import Any

from specbench.reports.projection_table import PROJECTED, RECORDED, Projection
from specbench.reports.table import html_text, md_text
from specbench.results.cell_flags import marks

SCHEMA = 1
HINDSIGHT_MARK = "*"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def projection_text(proj: Projection) -> str:
    """The markdown table and its notes, every text from the run or a profile escaped as ``compare``'s (a profile's
    ``machine.cpu`` holding ``|``, a newline or ``<script>`` stays one header cell)."""
    heads = ["method", "subtask", "measured (this run's machine)"] + [f"projected on {p.label}" for p in proj.profiles]
    lines = [f"# Projection of run {html_text(proj.run)}", "",
             "Speedups as they would read on each profile's machine: the run's own per-step records priced with "
             "that machine's measured costs. Projected figures are not measurements.", "",
             "| " + " | ".join(map(md_text, heads)) + " |", "|" + "---|" * len(heads)]
    hindsight = False
    for row in proj.rows:
        cells = []
        for c in row.projected:
            mark = "" if c.basis == RECORDED or c.speedup is None else HINDSIGHT_MARK
            hindsight |= bool(mark)
            cells.append(f"{_x(c.speedup)} {PROJECTED}{mark}{c.flag_text()}{marks(row.projected_flags())}")
        lines.append("| " + " | ".join([md_text(row.method), md_text(row.subtask), _x(row.measured) + marks(row.flags)]
                                       + cells) + " |")
    lines.append("")
    if hindsight:
        lines.append(f"{HINDSIGHT_MARK} projected: the best fixed budget in hindsight from the recorded drafts, "
                     "not the row's budget=auto (see the notes).")
    lines += [f"- {html_text(n)}" for n in proj.notes]
    lines += [f"- profile {html_text(p.label)}: {html_text(p.where)}" for p in proj.profiles]
    return "\n".join(lines) + "\n"


def projection_json(proj: Projection) -> dict[str, Any]:
    return {
        "kind": "specbench projection", "schema": SCHEMA, "run": proj.run,
        "profiles": [p.describe() for p in proj.profiles],
        "rows": [{"method": r.method, "subtask": r.subtask, "measured": r.measured, "flags": [f.mark for f in r.flags],
                  "projected": [{"kind": c.kind, "profile": p.label, "speedup": c.speedup, "basis": c.basis,
                                 "flags": list(c.flags) + [f.mark for f in r.projected_flags()]}
                                for p, c in zip(proj.profiles, r.projected)]} for r in proj.rows],
        "notes": list(proj.notes),
    }


def projection_csv(proj: Projection) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["run", "method", "subtask", "kind", "profile", "speedup", "basis", "flags"])
    for r in proj.rows:
        w.writerow([proj.run, r.method, r.subtask, "measured", "", _num(r.measured), "this run's machine",
                    "; ".join(f.mark for f in r.flags)])
        for p, c in zip(proj.profiles, r.projected):
            w.writerow([proj.run, r.method, r.subtask, c.kind, p.label, _num(c.speedup), c.basis,
                        "; ".join(list(c.flags) + [f.mark for f in r.projected_flags()])])
    return out.getvalue()


def _num(v: float | None) -> str:
    return "" if v is None else f"{v:.4f}"
