"""What is left of each method's speedup as the batch grows: tables and a plot of a run decoded at several
batch sizes (``--batch-size 1,2,4,8``).

At each size B the speedup of method M is M's throughput over AR's throughput at B on the same questions
(``results.loaded_run.Run.at_batch``: pooled tokens over pooled batch time, the 95% CI over questions as
everywhere). AR's own throughput at each size shows what batching alone buys. Per-sequence latency:
time to first token (TTFT, from the sequence's admission) and time per output token after it (TPOT).
Every sequence is checked against AR decoded alone (batch size 1).

Example row: ``pld | 1.29x ±0.08 (1.57) | 0.93x ±0.05 (1.55)``: PLD's speedup and tau at B = 1 and B = 4.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specbench.catalog import BASELINE, OVERALL
from specbench.reports.numfmt import fmt_num
from specbench.reports.table import Table
from specbench.results.lossless import EXACT, MISMATCH, TIE
from specbench.results.latency_percentiles import tpot_s
from specbench.results.loaded_run import Run
from specbench.results.stats import Cell, run_stats

PLOT_FILE = "batch_speedup.png"


@dataclass(frozen=True)
class Axis:
    """What the sizes of a run are: batch sizes of specbench's own loop, or an engine's concurrency levels
    (requests in flight at once, ``--concurrency``), whose baseline is ``engine:off`` (the engine view's ``ar``)."""

    name: str
    short: str
    plot_file: str
    baseline: str
    unit: str
    title: str  # the report section's heading


BATCH = Axis("batch size", "B", PLOT_FILE, "AR", "sequence", "Batch sizes")
CONCURRENCY = Axis("concurrency", "C", "concurrency_speedup.png", "engine:off", "request", "Concurrency levels")


def axis_of(run: Run) -> Axis:
    """Concurrency for an engine's view of a run (``loaded_run.subject_view``), else batch size."""
    return CONCURRENCY if run.manifest.get("view") == "engine" else BATCH


def batch_stats(run: Run, **kwargs: Any) -> dict[int, dict[str, dict[str, Cell]]]:
    """``{batch size: run_stats at that size}`` for every size of the folder."""
    return {size: run_stats(run.at_batch(size), **kwargs) for size in run.batch_sizes()}


def speedup_table(run: Run, by_size: dict[int, dict[str, dict[str, Cell]]]) -> Table:
    """Overall speedup ±CI (tau) of every method at every batch size; AR's row: its tokens/s."""
    sizes, axis = sorted(by_size), axis_of(run)
    rows, keys = [], []
    for m in run.methods():
        cells = [by_size[b].get(m, {}).get(OVERALL) for b in sizes]
        if m == BASELINE:
            rows.append([f"{m} (tokens/s)"] + [fmt_num(c.tokens_per_s if c else None, "{:.1f}") for c in cells])
        else:
            rows.append([m] + [f"{c.speedup_text()} ({c.tau:.2f})" if c and c.speedup is not None else "-" for c in cells])
        keys.append([None] + [c.speedup if c else None for c in cells])
    return Table(f"Speedup vs {axis.name} (Overall, 95% CI; tau in brackets; {axis.baseline}: its own tokens/s)",
                 ["method"] + [f"{axis.short}={b}" for b in sizes], rows, keys)


def latency_table(run: Run) -> Table:
    """Per-sequence TTFT and TPOT (medians) of every method at every batch size."""
    sizes, axis = run.batch_sizes(), axis_of(run)
    rows = []
    for m in run.methods():
        row = [m]
        for b in sizes:
            recs = [r for r in run.at_batch(b).records if r.method == m]
            ttft = [r.prefill_time_s for r in recs if r.prefill_time_s is not None]
            tpot = [t for r in recs if (t := tpot_s(r)) is not None]
            row.append(f"{fmt_num(_median(ttft) * 1e3 if ttft else None, '{:.0f}')} / "
                       f"{fmt_num(_median(tpot) * 1e3 if tpot else None, '{:.1f}')}")
        rows.append(row)
    return Table(f"Per-{axis.unit} latency vs {axis.name}: TTFT ms / TPOT ms (medians; TTFT from the {axis.unit}'s "
                 "admission)", ["method"] + [f"{axis.short}={b}" for b in sizes], rows, [[None] * len(row) for row in rows])


def lossless_table(run: Run) -> Table:
    """Exact / tie / mismatch counts of every method (AR included) at every batch size, against AR alone."""
    sizes, axis = run.batch_sizes(), axis_of(run)
    rows = []
    for m in run.methods():
        row = [m]
        for b in sizes:
            recs = [r for r in run.at_batch(b).records if r.method == m]
            if m == BASELINE and b == 1:
                row.append("reference")
                continue
            counts = {k: sum(r.lossless_class == k for r in recs) for k in (EXACT, TIE, MISMATCH)}
            row.append(f"{counts[EXACT]} / {counts[TIE]} / {counts[MISMATCH]}" if recs else "-")
        rows.append(row)
    alone = "AR decoded alone" if axis is BATCH else f"{axis.baseline} at {axis.short}=1"
    return Table(f"Lossless vs {alone}: exact / tie / MISMATCH", ["method"] + [f"{axis.short}={b}" for b in sizes],
                 rows, [[None] * len(row) for row in rows])


def write_plot(run: Run, by_size: dict[int, dict[str, dict[str, Cell]]], out: Path) -> bool:
    """``batch_speedup.png`` (an engine's: ``concurrency_speedup.png``): Overall speedup (CI bars) against batch
    size, a line per method; False when matplotlib cannot write it."""
    from specbench.reports.figures import pyplot

    plt = pyplot()
    sizes = sorted(by_size)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for m in run.methods():
        if m == BASELINE:
            continue
        cells = [by_size[b].get(m, {}).get(OVERALL) for b in sizes]
        pts = [(b, c) for b, c in zip(sizes, cells) if c is not None and c.speedup is not None]
        if not pts:
            continue
        xs = [b for b, _ in pts]
        ys = np.array([c.speedup for _, c in pts])
        lo = np.array([c.speedup - (c.ci_low if c.ci_low is not None else c.speedup) for _, c in pts])
        hi = np.array([(c.ci_high if c.ci_high is not None else c.speedup) - c.speedup for _, c in pts])
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=m)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(b) for b in sizes])
    axis = axis_of(run)
    ax.set_xlabel(axis.name)
    ax.set_ylabel(f"speedup vs {axis.baseline} at the same {axis.name}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(out / axis.plot_file, dpi=120)
        return True
    except OSError:
        return False
    finally:
        plt.close(fig)


def _median(xs: list[float]) -> float:
    return float(np.median(xs))
