"""Side-by-side comparison of runs of the same methods/tasks on different machines, dtypes or models.

Runs are comparable when they answered the same questions with the same ``max_new_tokens`` and the
same configuration of every method they share on the same engine backend; otherwise ``compare_runs`` raises ``NotComparable``
listing the differences (``force=True`` reports them and carries on). Ratios are "run X / run A".
"""
from __future__ import annotations

from typing import Any

from specbench.catalog import BASELINE, OVERALL, order_subtasks
from specbench.stats import Run, backend_label, dtype_label, hardware_label, model_label, precision_label, ran_on_cpu, run_stats
from specbench.table import Table


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
    ]
    headers = ["", *(_letter(i) for i in range(len(runs)))]
    rows = [[name, *(fn(r.manifest, r) for r in runs)] for name, fn in fields]
    return Table("Runs", headers, rows, [[None] * len(headers) for _ in rows])


def _ratio_cols(vals: list[float | None]) -> list[str]:
    base = vals[0]
    return [f"{v / base:.2f}" if v is not None and base else "-" for v in vals[1:]]


def compare_runs(runs: list[Run], force: bool = False, n_boot: int = 1000, seed: int = 0) -> tuple[list[Table], list[str]]:
    """Tables (fingerprints, AR tokens/s, speedup per method) and the differences that were forced past."""
    if len(runs) < 2:
        raise NotComparable("compare needs at least two run folders")
    diffs = differences(runs)
    if diffs and not force:
        raise NotComparable("runs are not comparable (use --force to compare anyway):\n  " + "\n  ".join(diffs))
    stats = [run_stats(r, n_boot, seed) for r in runs]
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

    methods = [m for m in dict.fromkeys(m for r in runs for m in r.methods()) if m != BASELINE]
    for method in methods:
        rows = []
        for sub in subs:
            cells = [(st.get(method) or {}).get(sub) for st in stats]
            sp = [c.speedup if c else None for c in cells]
            rows.append([sub, *(c.speedup_text() if c else "-" for c in cells),
                         *(f"{c.tau:.2f}" if c else "-" for c in cells), *_ratio_cols(sp)])
        headers = ["Subtask", *(f"{x} speedup" for x in letters), *(f"{x} tau" for x in letters), *ratio_headers]
        tables.append(Table(f"{method}: speedup vs ar on each run", headers, rows, []))
    return tables, diffs
