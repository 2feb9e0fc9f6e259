"""Side-by-side comparison of runs of the same methods/tasks on different machines, dtypes or models.

Runs are comparable when they answered the same questions with the same ``max_new_tokens`` and the
same configuration of every method they share on the same engine backend; otherwise ``compare_runs`` raises ``NotComparable``
listing the differences (``force=True`` reports them and carries on). Ratios are "run X / run A".

Views across models and dtypes (Spec-Bench's model-scale and precision figures): when the runs differ
in model, dtype or sampling settings (T=0 vs T>0: Spec-Bench's temperature comparison), ``compare_runs``
adds a table per varying axis — each method's Overall speedup (95%
CI), tau and lossless status per model / per dtype — and ``speedup_plot`` draws the same as grouped bars.
"""
from __future__ import annotations

from typing import Any

from specbench.catalog import BASELINE, OVERALL, order_subtasks
from specbench.engine.sampling_config import sampling_label
from specbench.reports.labels import (backend_label, dtype_label, hardware_label, model_label, precision_label,
                                      ran_on_cpu)
from specbench.reports.table import Table
from specbench.results.loaded_run import Run
from specbench.results.lossless import lossless_status
from specbench.results.stats import Cell, run_stats


class NotComparable(ValueError):
    """The runs differ in questions, max_new_tokens, backend or method configs (message lists the differences)."""


def _questions(run: Run) -> dict[str, list[str]]:
    q = run.manifest.get("questions")
    if q:
        return {t: sorted(map(str, ids)) for t, ids in q.items()}
    out: dict[str, set[str]] = {}
    for r in run.records:
        out.setdefault(r.task, set()).add(r.question_id)
    return {t: sorted(ids) for t, ids in out.items()}


def _max_new(run: Run) -> Any:
    return (run.manifest.get("config") or {}).get("max_new_tokens")


def differences(runs: list[Run]) -> list[str]:
    """Human-readable differences that make ``runs`` incomparable (empty list = comparable)."""
    out: list[str] = []
    base = runs[0]
    bq = _questions(base)
    for run in runs[1:]:
        tag = f"{base.name} vs {run.name}"
        rq = _questions(run)
        for task in sorted(set(bq) | set(rq)):
            a, b = set(bq.get(task, [])), set(rq.get(task, []))
            if a != b:
                out.append(f"{tag}: task {task} questions differ ({len(a - b)} only in the first, {len(b - a)} only in the second)")
        if backend_label(base.manifest) != backend_label(run.manifest):
            out.append(f"{tag}: backend {backend_label(base.manifest)} != {backend_label(run.manifest)}")
        if _max_new(base) != _max_new(run):
            out.append(f"{tag}: max_new_tokens {_max_new(base)} != {_max_new(run)}")
        bc, rc = base.manifest.get("method_configs") or {}, run.manifest.get("method_configs") or {}
        for m in sorted(set(base.methods()) & set(run.methods())):
            if bc.get(m) != rc.get(m):
                out.append(f"{tag}: method {m} config {bc.get(m)} != {rc.get(m)}")
        bv, rv = base.manifest.get("task_versions") or {}, run.manifest.get("task_versions") or {}
        for task in sorted(set(bv) & set(rv)):
            if bv[task] != rv[task]:
                out.append(f"{tag}: task {task} version {bv[task]} != {rv[task]}")
    return out


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"R{i}"


def fingerprint_table(runs: list[Run]) -> Table:
    """Hardware fingerprint, software and model of each run (rows) per run (columns)."""
    fields = [
        ("run", lambda m, r: r.name),
        ("source", lambda m, r: str((m.get("imported") or {}).get("note") or "specbench run")),
        ("hardware", lambda m, r: hardware_label(m)),
        ("CPU", lambda m, r: f"{(m.get('hardware') or {}).get('cpu', '?')} ({(m.get('hardware') or {}).get('cores', '?')} cores)"),
        ("device", lambda m, r: str((m.get("hardware") or {}).get("device") or (m.get("model") or {}).get("device") or "?")),
        ("GPU", lambda m, r: "-" if ran_on_cpu(m) else str((m.get("hardware") or {}).get("gpu") or "-")),
        ("GPU index / UUID / CC", lambda m, r: " / ".join(str((m.get("hardware") or {}).get(k) or "-")
                                                         for k in ("gpu_index", "gpu_uuid", "compute_capability"))),
        ("GPU memory GB", lambda m, r: str((m.get("hardware") or {}).get("gpu_memory_gb") or "-")),
        ("CUDA / driver (its CUDA) / cuDNN", lambda m, r: "{} / {} ({}) / {}".format(
            *((m.get("hardware") or {}).get(k) or "-" for k in ("cuda", "driver", "driver_cuda", "cudnn")))),
        ("reduced-precision flags", lambda m, r: precision_label(m)),
        ("torch", lambda m, r: str((m.get("versions") or {}).get("torch", "?"))),
        ("transformers", lambda m, r: str((m.get("versions") or {}).get("transformers", "?"))),
        ("model", lambda m, r: model_label(m)),
        ("dtype", lambda m, r: dtype_label(m)),
        ("backend", lambda m, r: backend_label(m)),
        ("max_new_tokens", lambda m, r: str(_max_new(r))),
        ("sampling", lambda m, r: sampling_label(m)),
    ]
    headers = ["", *(_letter(i) for i in range(len(runs)))]
    rows = [[name, *(fn(r.manifest, r) for r in runs)] for name, fn in fields]
    return Table("Runs", headers, rows, [[None] * len(headers) for _ in rows])


def _ratio_cols(vals: list[float | None]) -> list[str]:
    base = vals[0]
    return [f"{v / base:.2f}" if v is not None and base else "-" for v in vals[1:]]


def compare_runs(runs: list[Run], force: bool = False, n_boot: int = 1000, seed: int = 0,
                 stats: list[dict[str, dict[str, Cell]]] | None = None) -> tuple[list[Table], list[str]]:
    """Tables (fingerprints, AR tokens/s, speedup per method, per-model / per-dtype views) and the
    differences that were forced past; pass each run's ``run_stats`` as ``stats`` to reuse them."""
    if len(runs) < 2:
        raise NotComparable("compare needs at least two run folders")
    diffs = differences(runs)
    if diffs and not force:
        raise NotComparable("runs are not comparable (use --force to compare anyway):\n  " + "\n  ".join(diffs))
    stats = [run_stats(r, n_boot, seed) for r in runs] if stats is None else stats
    letters = [_letter(i) for i in range(len(runs))]
    ratio_headers = [f"{x}/A" for x in letters[1:]]
    subs = order_subtasks({s for st in stats for cells in st.values() for s in cells if s != OVERALL}) + [OVERALL]
    tables = [fingerprint_table(runs)]

    rows = []
    for sub in subs:
        vals = [(st.get(BASELINE) or {}).get(sub) for st in stats]
        tps = [c.tokens_per_s if c else None for c in vals]
        rows.append([sub, *(f"{v:.1f}" if v is not None else "-" for v in tps), *_ratio_cols(tps)])
    tables.append(Table("ar tokens/s (machine speed)", ["Subtask", *letters, *ratio_headers], rows, []))

    for method in _methods(runs):
        rows = []
        for sub in subs:
            cells = [(st.get(method) or {}).get(sub) for st in stats]
            sp = [c.speedup if c else None for c in cells]
            rows.append([sub, *(c.speedup_text() if c else "-" for c in cells),
                         *(f"{c.tau:.2f}" if c else "-" for c in cells), *_ratio_cols(sp)])
        headers = ["Subtask", *(f"{x} speedup" for x in letters), *(f"{x} tau" for x in letters), *ratio_headers]
        tables.append(Table(f"{method}: speedup vs ar on each run", headers, rows, []))
    for axis in varying_axes(runs):
        tables.append(axis_table(runs, stats, axis))
    return tables, diffs


AXES = {"model": model_label, "dtype": dtype_label, "sampling": sampling_label}


def varying_axes(runs: list[Run]) -> list[str]:
    """The axes of ``AXES`` along which the runs differ (``["model"]``, ``["dtype"]``, both or none)."""
    return [axis for axis, label in AXES.items() if len({label(r.manifest) for r in runs}) > 1]


def run_labels(runs: list[Run], axes: list[str]) -> list[str]:
    """Column label of each run: its values along ``axes``; where two runs tie, every label adds the
    other varying axes, and a run letter where they still tie.

    >>> from pathlib import Path
    >>> specs = (("7B", "float32"), ("13B", "float32"), ("7B", "bfloat16"))
    >>> rs = [Run(Path(m + d), {"model": {"id": m, "dtype": d}}, []) for m, d in specs]
    >>> run_labels(rs, ["model"]), run_labels(rs[:1] * 2, ["model"])
    (['7B · float32', '13B · float32', '7B · bfloat16'], ['7B [A]', '7B [B]'])
    """
    for axes_used in (axes, axes + [a for a in varying_axes(runs) if a not in axes]):
        base = [" · ".join(AXES[a](r.manifest) for a in axes_used) or r.name for r in runs]
        if len(set(base)) == len(base):
            return base
    return [f"{b} [{_letter(i)}]" for i, b in enumerate(base)]


def _methods(runs: list[Run]) -> list[str]:
    return [m for m in dict.fromkeys(m for r in runs for m in r.methods()) if m != BASELINE]


def axis_table(runs: list[Run], stats: list[dict[str, dict[str, Cell]]], axis: str) -> Table:
    """Methods (rows) x runs labelled by ``axis`` (columns): Overall speedup ±CI, tau and lossless status."""
    labels = run_labels(runs, [axis])
    headers = ["Method", *(f"{x} speedup" for x in labels), *(f"{x} tau" for x in labels), *(f"{x} lossless" for x in labels)]
    rows, keys = [], []
    for method in _methods(runs):
        cells = [(st.get(method) or {}).get(OVERALL) for st in stats]
        rows.append([method, *(c.speedup_text() if c else "-" for c in cells),
                     *(f"{c.tau:.2f}" if c else "-" for c in cells),
                     *(lossless_status(st.get(method) or {}, method) if st.get(method) else "-" for st in stats)])
        keys.append([method, *(c.speedup if c else None for c in cells), *(c.tau if c else None for c in cells),
                     *([None] * len(cells))])
    return Table(f"Speedup per method by {axis} (Overall, 95% CI)", headers, rows, keys)


def speedup_plot(runs: list[Run], stats: list[dict[str, dict[str, Cell]]]) -> Any:
    """A matplotlib figure: per method (x) one bar per run labelled by its model / dtype, CI error bars."""
    from specbench.reports.leaderboard.plots import bars_with_ci, pyplot

    plt = pyplot()
    labels = run_labels(runs, varying_axes(runs))
    methods = _methods(runs)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(methods) * max(len(runs), 2) ** 0.5 + 2), 3.6))
    width = 0.8 / len(runs)
    for i, (label, st) in enumerate(zip(labels, stats)):
        placed = [(j - 0.4 + width * (i + 0.5), (st.get(m) or {}).get(OVERALL)) for j, m in enumerate(methods)]
        bars_with_ci(ax, placed, width, label)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(methods)), methods)
    ax.set_ylabel("Overall speedup vs ar (x)")
    ax.set_title("Speedup per method" + (f" by {' and '.join(varying_axes(runs))}" if varying_axes(runs) else " per run"))
    ax.legend(fontsize=8)
    return fig
