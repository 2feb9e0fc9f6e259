"""Speedup per method per machine: a run's measured Overall speedup and its projection onto each ``--onto``
profile, as grouped bars (methods on x). Projected bars are hatched and their legend entries read
``projected: <profile label>``, so a figure cut out of its page still says which bars are estimates.

Drawn with matplotlib like every specbench figure (``reports/figures.py``): ``specbench compare --plot`` writes
it beside the per-run figure, the leaderboard embeds it (``--no-plots`` skips it).

>>> from specbench.reports.projection_table import Projection, ProjectionRow, ProjectedCell
>>> class P:
...     label = "Example GPU, fast, float16, 2026-01-01"
>>> proj = Projection("demo", (P(),), (ProjectionRow("pld", "Overall", 1.5, (ProjectedCell(1.2, "recorded"),)),), ())
>>> [(s.label, s.hatch) for s in bar_series([proj])]
[('measured: run demo', None), ('projected: Example GPU, fast, float16, 2026-01-01', '//')]
>>> bar_series([proj])[1].heights
{'pld': 1.2}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.reports.projection_table import OVERALL, PROJECTED, Projection

HATCH = "//"


@dataclass(frozen=True)
class BarSeries:
    """One bar per method: a run's measured speedups, or its projection onto one profile (hatched)."""

    label: str
    heights: dict[str, float]
    hatch: str | None


def bar_series(projs: list[Projection]) -> list[BarSeries]:
    """Per run its measured series, then one projected series per profile (run named when there are several)."""
    out = []
    for proj in projs:
        tail = f" (run {proj.run})" if len(projs) > 1 else ""
        overall = [r for r in proj.rows if r.subtask == OVERALL]
        out.append(BarSeries(f"measured: run {proj.run}",
                             {r.method: r.measured for r in overall if r.measured is not None}, None))
        for i, p in enumerate(proj.profiles):
            heights = {r.method: r.projected[i].speedup for r in overall if r.projected[i].speedup is not None}
            out.append(BarSeries(f"{PROJECTED}: {p.label}{tail}", heights, HATCH))
    return out


def machine_speedup_plot(projs: list[Projection]) -> Any:
    """The figure (matplotlib): per method one bar per series of ``bar_series``, a dashed line at 1x."""
    from specbench.reports.figures import pyplot

    plt = pyplot()
    series = bar_series(projs)
    methods = list(dict.fromkeys(m for s in series for m in s.heights))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.5 * len(methods) * len(series) + 2), 3.6))
    width = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        placed = [(j - 0.4 + width * (i + 0.5), s.heights[m]) for j, m in enumerate(methods) if m in s.heights]
        ax.bar([x for x, _ in placed], [h for _, h in placed], width, label=s.label, hatch=s.hatch,
               edgecolor="black" if s.hatch else None, linewidth=0.5)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(methods)), methods)
    ax.set_ylabel("Overall speedup vs ar (x)")
    ax.set_title("Speedup per method per machine (hatched: projected, not measured)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1)
    return fig
