"""Paper-default vs ``budget=auto`` rows of the same method, side by side, and the cost model's check.

For every method run both ways in one run (labels ``NAME`` and ``NAME@auto``), per subtask: the
default's speedup, auto's speedup and auto / default, the paired ratio of their tokens per second on
the same questions with its 95% paired-bootstrap CI (``specbench.results.stats.paired_speedup`` with the
default in the baseline's place). A ratio whose CI lies below 1 means auto made the method slower.

>>> auto_pairs(["ar", "rest", "rest@auto", "pld@auto", "dresd"])
[('rest', 'rest@auto')]
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from specbench.catalog import BASELINE, OVERALL
from specbench.reports.numfmt import fmt_num
from specbench.reports.prediction import prediction_rows
from specbench.reports.table import Table
from specbench.results.loaded_run import Run
from specbench.results.stats import Cell, paired_rows, paired_speedup

AUTO_SUFFIX = "@auto"


def auto_pairs(methods: list[str]) -> list[tuple[str, str]]:
    """(default label, auto label) for each method present both ways."""
    present = set(methods)
    return [(m[: -len(AUTO_SUFFIX)], m) for m in methods if m.endswith(AUTO_SUFFIX) and m[: -len(AUTO_SUFFIX)] in present]


def auto_ratios(run: Run, default: str, auto: str) -> dict[str, tuple[float | None, float | None, float | None]]:
    """``{subtask | Overall: (auto / default, CI low, CI high)}`` paired per question."""
    by: dict[tuple[str, str], list] = defaultdict(list)
    for r in run.records:
        if r.method in (default, auto):
            by[(r.method, r.subtask)].append(r)
    out = {}
    strata: list[np.ndarray] = []
    for sub in run.subtasks():
        rows = paired_rows(by.get((auto, sub), []), by.get((default, sub), []))
        if len(rows):
            out[sub] = paired_speedup([rows])
            strata.append(rows)
    if strata:
        out[OVERALL] = paired_speedup(strata)
    return out


def _ratio_text(r: tuple[float | None, float | None, float | None] | None) -> str:
    if r is None or r[0] is None:
        return "-"
    ci = f" [{r[1]:.2f}, {r[2]:.2f}]" if r[1] is not None and r[2] is not None else ""
    return f"x{r[0]:.2f}{ci}"


def auto_vs_default_table(run: Run, stats: dict[str, dict[str, Cell]]) -> Table | None:
    """Per method run both ways, per subtask: ``default -> auto speedup (auto/default ratio [95% CI])``."""
    pairs = auto_pairs(run.methods())
    if not pairs:
        return None
    cols = run.subtasks() + [OVERALL]
    rows, keys = [], []
    for default, auto in pairs:
        ratios = auto_ratios(run, default, auto)
        row, key = [default], [default]
        for c in cols:
            d, a = stats[default].get(c), stats[auto].get(c)
            if d is None or a is None or d.speedup is None or a.speedup is None:
                row.append("-")
                key.append(None)
                continue
            row.append(f"{d.speedup:.2f}x -> {a.speedup:.2f}x ({_ratio_text(ratios.get(c))})")
            key.append(ratios.get(c, (None,))[0])
        rows.append(row)
        keys.append(key)
    title = ("Paper default -> budget=auto: speedup vs AR of each, and auto / default tokens per second "
             "on the same questions [95% paired-bootstrap CI]")
    return Table(title, ["method"] + cols, rows, keys)


def prediction_table(run: Run, profile: dict[str, Any]) -> Table:
    """Predicted (the cost profile's model, ``specbench.reports.prediction``) vs measured speedup per method."""
    from specbench.profiling.cost_profile import cost_function

    rows, keys = [], []
    for p in prediction_rows(run.records, run.methods(), BASELINE, cost_function(profile)):
        rows.append([p["method"], f"{p['predicted']:.2f}x", f"{p['measured']:.2f}x", fmt_num(100 * p["error"], "{:+.1f}%")])
        keys.append([p["method"], p["predicted"], p["measured"], p["error"]])
    title = ("Predicted speedup (this run's cost profile T(n), recorded draft sizes, draft times and prefill) "
             "vs measured (all subtasks pooled)")
    return Table(title, ["method", "predicted", "measured", "error"], rows, keys)
