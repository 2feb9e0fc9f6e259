"""Parameter sweeps of one method: the grid, its points and their folders, each point's statistics, the best one.

A grid is one or more ``METHOD.KEY=V1,V2,...`` options; its points are their cartesian product, first key
outermost. Each point is a normal run (AR + the method with the point's options) in its own folder named
after the point; its statistics come from ``specbench.results.stats.run_stats`` on that folder. The best point has
the highest Overall speedup (point estimate); whether its 95% CI overlaps the runner-up's is said with it.

>>> grid = parse_grid(["dresd.num_drafts=5,10", "dresd.draft_len=4"], "dresd")
>>> [p.label for p in grid_points(grid)]
['num_drafts=5,draft_len=4', 'num_drafts=10,draft_len=4']
>>> p = grid_points(grid)[1]
>>> p.folder, p.method_opt_line("dresd")
('num_drafts=10+draft_len=4', '--method-opt dresd.num_drafts=10 --method-opt dresd.draft_len=4')
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.catalog import OVERALL
from specbench.errors import ConfigError
from specbench.results.budget_oracle import oracle_summary
from specbench.results.loaded_run import load_run
from specbench.results.stats import Cell, run_stats

SWEEP_SCHEMA = 1
GRID_FORMAT = "--grid expects METHOD.KEY=V1,V2,..."


@dataclass(frozen=True)
class SweepPoint:
    """One grid point: ``(key, value)`` pairs in grid key order (values as given, coerced by the method)."""

    options: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        """``c=16``; with several keys ``num_drafts=5,draft_len=5``."""
        return ",".join(f"{k}={v}" for k, v in self.options)

    @property
    def folder(self) -> str:
        """The point's run folder name: the label with ``+`` between keys, other unsafe characters as ``_``."""
        return "+".join(re.sub(r"[^A-Za-z0-9._=-]", "_", f"{k}={v}") for k, v in self.options)

    def as_dict(self) -> dict[str, str]:
        return dict(self.options)

    def method_opt_line(self, method: str) -> str:
        """The flags that select this point in ``specbench run``: ``--method-opt rest.c=16``."""
        return " ".join(f"--method-opt {method}.{k}={v}" for k, v in self.options)


def parse_grid(items: list[str] | None, method: str) -> dict[str, list[str]]:
    """``["rest.c=8,16"]`` -> ``{"c": ["8", "16"]}`` (keys in the order given); one-line ConfigErrors.

    >>> parse_grid(["rest.c=8, 16,32"], "rest")
    {'c': ['8', '16', '32']}
    """
    if not items:
        raise ConfigError(f"{GRID_FORMAT} (at least one --grid)")
    grid: dict[str, list[str]] = {}
    for item in items:
        lhs, sep, rhs = item.partition("=")
        owner, dot, key = lhs.strip().partition(".")
        values = [v.strip() for v in rhs.split(",")]
        if not sep or not dot or not owner or not key.strip() or not all(values):
            raise ConfigError(f"{GRID_FORMAT}, got {item!r}")
        key = key.strip()
        if owner != method:
            raise ConfigError(f"--grid {owner}.{key}: the option belongs to method {owner!r}, but --method is "
                              f"{method!r}")
        if key in grid:
            raise ConfigError(f"--grid {method}.{key} given twice; list all its values in one --grid")
        if len(set(values)) != len(values):
            raise ConfigError(f"--grid {method}.{key}: a value is listed twice ({rhs.strip()})")
        grid[key] = values
    return grid


def grid_points(grid: dict[str, list[str]]) -> list[SweepPoint]:
    """The cartesian product of the grid's values, first key outermost; distinct folders guaranteed."""
    keys = list(grid)
    points = [SweepPoint(tuple(zip(keys, combo))) for combo in itertools.product(*(grid[k] for k in keys))]
    folders: dict[str, str] = {}
    for p in points:
        if p.folder.strip(".") == "":  # (the other characters are folder-safe by construction)
            raise ConfigError(f"--grid point {p.label!r}: no usable folder name ({p.folder!r})")
        if p.folder in folders:
            raise ConfigError(f"--grid points {folders[p.folder]!r} and {p.label!r} map to the same folder "
                              f"{p.folder!r}")
        folders[p.folder] = p.label
    return points


@dataclass
class PointResult:
    """The statistics of one point's run: the method's Overall cell and its per-subtask cells."""

    point: SweepPoint
    overall: Cell | None
    subtasks: dict[str, Cell] = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        return self.overall.speedup if self.overall else None


def point_result(point: SweepPoint, run_dir: Path, method: str) -> PointResult:
    """``run_stats`` of the point's run folder, reduced to ``method``'s cells."""
    cells = run_stats(load_run(run_dir)).get(method, {})
    return PointResult(point, cells.get(OVERALL), {s: c for s, c in cells.items() if s != OVERALL})


@dataclass(frozen=True)
class Best:
    """The best point, the runner-up (None with one point) and whether their CIs overlap (None: unknown)."""

    best: PointResult
    runner_up: PointResult | None
    overlaps: bool | None


def best_point(results: list[PointResult]) -> Best | None:
    """The point with the highest Overall speedup (point estimate; ties: the first in grid order).

    >>> def r(label, sp, lo, hi):
    ...     return PointResult(SweepPoint((("c", label),)), Cell("rest", OVERALL, 3, sp, lo, hi, 1.5, None, 4.0,
    ...                        0.0, 0.0, 1.0, 10, 1.0, 0.0))
    >>> b = best_point([r("8", 0.9, 0.8, 1.0), r("16", 1.1, 0.95, 1.2), r("32", 1.0, 0.9, 1.05)])
    >>> b.best.point.label, b.runner_up.point.label, b.overlaps
    ('c=16', 'c=32', True)
    """
    ranked = sorted((r for r in results if r.speedup is not None), key=lambda r: -r.speedup)  # stable: grid order
    if not ranked:
        return None
    best, runner = ranked[0], (ranked[1] if len(ranked) > 1 else None)
    return Best(best, runner, _cis_overlap(best.overall, runner.overall) if runner else None)


def _cis_overlap(a: Cell, b: Cell) -> bool | None:
    if None in (a.ci_low, a.ci_high, b.ci_low, b.ci_high):
        return None
    return a.ci_low <= b.ci_high and b.ci_low <= a.ci_high


def best_line(method: str, best: Best | None) -> str:
    """What the sweep prints last: the best point and how sure it is, then its ready-to-paste flags."""
    if best is None:
        return "no point has an Overall speedup (no paired AR data); nothing to recommend"
    b = best.best
    text = f"best point: {b.point.label} (Overall {b.overall.speedup_text()}"
    if best.runner_up is not None:
        r = best.runner_up
        sure = {True: "its 95% CI overlaps", False: "its 95% CI does not overlap",
                None: "no CI to compare with"}[best.overlaps]
        text += f"; {sure} the runner-up {r.point.label} at {r.overall.speedup_text()}"
    return f"{text})\n{b.point.method_opt_line(method)}"


def _cell_json(c: Cell | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"speedup": c.speedup, "ci_low": c.ci_low, "ci_high": c.ci_high, "tau": c.tau,
            "mean_draft_size": c.mean_draft_size, "acceptance_rate": c.acceptance_rate,
            "n_questions": c.n_questions, "lossless": c.lossless}


def sweep_summary(method: str, grid: dict[str, list[str]], fixed: dict[str, Any], results: list[PointResult],
                  command: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The content of ``sweep.json``: grid, fixed options, run settings, every point's numbers, the best and,
    when the grid has a ``budget`` axis with ``auto`` and a fixed budget, the budget oracle (``budget_oracle.py``)."""
    best = best_point(results)
    return {
        "schema": SWEEP_SCHEMA,
        "method": method,
        "grid": grid,
        "fixed_options": fixed,
        "settings": settings,
        "command": command,
        "points": [{"label": r.point.label, "folder": r.point.folder, "options": r.point.as_dict(),
                    "overall": _cell_json(r.overall),
                    "subtasks": {s: _cell_json(c) for s, c in r.subtasks.items()}} for r in results],
        "best": None if best is None else {
            "label": best.best.point.label,
            "method_opt": best.best.point.method_opt_line(method),
            "runner_up": best.runner_up.point.label if best.runner_up else None,
            "ci_overlaps_runner_up": best.overlaps,
        },
        "budget_oracle": oracle_summary(results),
    }
