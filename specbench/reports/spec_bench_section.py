"""The report section a ``--preset spec-bench`` run adds: its speedups in Spec-Bench's own definition.

Such a run exists to be read beside Spec-Bench's published leaderboard, which divides mean per-question
speeds (``results.spec_bench_speedup``) where specbench's tables pool tokens over time; this section gives
the run's numbers in the published definition, so that comparison is like with like. Other runs' reports
get nothing from here.

Example (a run without the preset)::

    >>> from pathlib import Path
    >>> from specbench.results.loaded_run import Run
    >>> spec_bench_section(Run(Path("r"), {"config": {}}, []), "github")
    []
"""
from __future__ import annotations

from specbench.catalog import OVERALL
from specbench.reports.table import escaped_tabulate as tabulate  # every cell escaped for markdown and HTML
from specbench.results.loaded_run import Run
from specbench.results.spec_bench_speedup import SPEC_BENCH_DEFINITION, spec_bench_speedups

PRESET = "spec-bench"


def spec_bench_section(run: Run, fmt: str) -> list[str]:
    """One markdown section (method rows x subtasks + Overall) for a ``spec-bench`` preset run, else none."""
    if (run.manifest.get("config") or {}).get("preset") != PRESET:
        return []
    cols = run.subtasks() + [OVERALL]
    rows = [[method] + [f"{v:.2f}x" if (v := cells.get(c)) is not None else "-" for c in cols]
            for method, cells in spec_bench_speedups(run).items()]
    title = (f"Speedup vs AR in {SPEC_BENCH_DEFINITION} (the published leaderboard's definition: mean over "
             "questions of tokens/s, over AR's; Overall = all questions; no CI)")
    return [f"### {title}\n\n" + tabulate(rows, headers=["method"] + cols, tablefmt=fmt)]
