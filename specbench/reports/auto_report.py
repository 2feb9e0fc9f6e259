"""``budget=auto``'s own account of a run: how often it drafted, and how well it foresaw the speedup.

For every ``budget=auto`` method, per batch size and subtask (and Overall):
- **drafted**: the share of decode steps that drafted (the rest ran plain, the drafter not called). An ``auto``
  row near 1.0x that drafted in almost no step is AR under another name: this column says so.
- **predicted (profile)**: the cost profile's model (``prediction.py``: recorded draft sizes and times priced
  with T(n)); batch size 1 only, since the profile prices one sequence.
- **predicted (calibrated)**: the budget's own price of each step, made before the step ran with the costs it had
  calibrated on the run's earlier steps (``budget/step_costs.py``), against its price of the same tokens as
  plain steps: ``(prefill + predicted_ar_s) / (prefill + predicted_s)`` pooled over the cell's generations
  (record fields of schema 8).
- **measured**: the pooled speedup against AR on the same questions, as everywhere in the report.
- **plain forward / AR's**: the median forward of the cell's plain steps (no draft verified) over AR's median
  forward on the same question, geometric mean over the generations with at least ``PLAIN_SEEN`` plain steps. The
  work is identical, so a figure away from 1.00 is the machine drifting between the two runs (a slow spell): the
  measured speedup carries it and no choice of the budget can avoid it. On a 2-core VM a B=8 unit of 8-15 seconds
  read 1.21 for a method that drafted 2 of its 1852 steps on the task.

>>> within([(1.02, 1.00), (1.20, 1.00), (None, 1.1)], 0.05)
(1, 2)
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable

import numpy as np

from specbench.catalog import BASELINE, OVERALL
from specbench.reports.numfmt import fmt_num
from specbench.reports.prediction import prediction
from specbench.reports.table import Table
from specbench.results.record import Record, Unit

TOLERANCE = 0.05  # the bar: a prediction within 5% of the measured speedup
PLAIN_SEEN = 10  # plain steps a generation needs before its median forward is set against AR's


def drafted_share(recs: Iterable[Record]) -> float | None:
    """Decode steps that drafted / decode steps the budget chose for (None without ``budget=auto`` records)."""
    drafted = skipped = 0
    for r in recs:
        if r.drafted_steps is not None:
            drafted += r.drafted_steps
            skipped += r.skipped_steps or 0
    return drafted / (drafted + skipped) if drafted + skipped else None


def calibrated_speedup(recs: Iterable[Record]) -> float | None:
    """The budget's predicted speedup: its price of the tokens as plain steps over its price of the steps run."""
    plain = run = 0.0
    for r in recs:
        if r.predicted_s is None or r.predicted_ar_s is None:
            continue
        prefill = r.prefill_time_s or 0.0
        plain += prefill + r.predicted_ar_s
        run += prefill + r.predicted_s
    return plain / run if run > 0 else None


def plain_forward_ratio(recs: Iterable[Record], ar: dict[Unit, Record]) -> float | None:
    """The cell's plain forward over AR's (module docstring; None: no generation with ``PLAIN_SEEN`` plain steps).
    Step 0 is the prefill in both records.

    >>> from types import SimpleNamespace as R
    >>> u = Unit("gsm8k", "1", 1, 0)
    >>> ar = {u: R(unit=u, verify_times_s=[0.5] + [0.040] * 12)}
    >>> auto = R(unit=u, verify_times_s=[0.5] + [0.044] * 11 + [0.090], draft_sizes=[0] * 12 + [4])
    >>> round(plain_forward_ratio([auto], ar), 3)  # (the drafted step's wide forward is left out)
    1.1
    """
    logs = []
    for r in recs:
        a = ar.get(r.unit)
        if a is None or len(a.verify_times_s or []) < 2:
            continue
        plain = [t for t, d in zip(r.verify_times_s[1:], r.draft_sizes[1:]) if d == 0]
        if len(plain) >= PLAIN_SEEN:
            logs.append(np.log(np.median(plain) / np.median(a.verify_times_s[1:])))
    return float(np.exp(np.mean(logs))) if logs else None


def within(pairs: list[tuple[float | None, float | None]], tolerance: float = TOLERANCE) -> tuple[int, int]:
    """(cells whose prediction is within ``tolerance`` of the measured speedup, cells with both figures)."""
    both = [(p, m) for p, m in pairs if p is not None and m]
    return sum(abs(p / m - 1) <= tolerance for p, m in both), len(both)


def auto_table(records: list[Record], cost: Callable[..., Any] | None) -> Table | None:
    """The table of the module docstring (None when no record is a ``budget=auto`` one)."""
    auto = sorted({r.method for r in records if r.drafted_steps is not None})
    if not auto:
        return None
    ar: dict[tuple[int, str], list[Record]] = defaultdict(list)
    ar_of: dict[Unit, Record] = {r.unit: r for r in records if r.method == BASELINE}
    cells: dict[tuple[str, int, str], list[Record]] = defaultdict(list)
    for r in records:
        for sub in (r.subtask, OVERALL):
            if r.method == BASELINE:
                ar[(r.unit.batch, sub)].append(r)
            elif r.method in auto:
                cells[(r.method, r.unit.batch, sub)].append(r)
    rows, keys, calibrated, profiled = [], [], [], []
    for (method, batch, sub), recs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] == OVERALL)):
        pm = prediction(recs, ar.get((batch, sub), []), cost or _no_profile)
        measured = pm[1] if pm else None
        profile = pm[0] if pm and batch == 1 and cost is not None else None
        cal = calibrated_speedup(recs)
        share = drafted_share(recs)
        drift = plain_forward_ratio(recs, ar_of)
        if sub != OVERALL:
            calibrated.append((cal, measured))
            profiled.append((profile, measured))
        error = cal / measured - 1 if cal is not None and measured else None
        rows.append([method, batch, sub, fmt_num(None if share is None else 100 * share, "{:.0f}%"),
                     fmt_num(profile, "{:.2f}x"), fmt_num(cal, "{:.2f}x"), fmt_num(measured, "{:.2f}x"),
                     fmt_num(None if error is None else 100 * error, "{:+.1f}%"), fmt_num(drift, "{:.2f}")])
        keys.append([method, batch, sub, share, profile, cal, measured, error, drift])
    ok, n = within(calibrated)
    pok, pn = within(profiled)
    title = (f"budget=auto: share of decode steps drafted, and predicted vs measured speedup (calibrated prediction "
             f"within {TOLERANCE:.0%} of measured in {ok} of {n} subtask cells; the profile's in {pok} of {pn})")
    return Table(title, ["method", "batch", "subtask", "drafted", "predicted (profile)", "predicted (calibrated)",
                         "measured", "calibrated error", "plain forward / AR's"], rows, keys)


def _no_profile(n: Any, context: Any = None) -> np.ndarray:
    """A stand-in profile (every forward 1 s) when the run kept none: ``prediction``'s measured half is all we read."""
    return np.ones(np.shape(n))
