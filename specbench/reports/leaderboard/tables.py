"""Leaderboard tables as plain data (rendered to markdown and HTML elsewhere).

Runs are grouped by (model, hardware, dtype, sampling: ``T=0`` greedy or ``T=1 ...``, so greedy and
sampling runs sit side by side, never in one table); each group gets a Spec-Bench style table (methods as
rows, subtask speedups + tau + Overall as columns, sorted by Overall), a details table, the metric
tables of ``specbench.reports.metric_tables`` (latency and memory, per-position acceptance, accepted-length
distribution, MT-Bench categories), and a footer.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from specbench.catalog import BASELINE, OVERALL, order_subtasks
from specbench.engine.sampling_config import sampling_label
from specbench.reports import batch_report as BR
from specbench.reports import metric_tables as MT
from specbench.reports.labels import backend_label, dtype_label, hardware_label, model_label
from specbench.reports.numfmt import fmt_num
from specbench.reports.summary import method_overhead
from specbench.reports.table import Table
from specbench.results.loaded_run import Run
from specbench.results.lossless import lossless_status
from specbench.results.stats import Cell, category_stats, run_stats


@dataclass
class Group:
    """Runs sharing (model, hardware, dtype, sampling), with their statistics and rendered tables."""

    model: str
    hardware: str
    dtype: str
    sampling: str = "T=0"
    runs: list[Run] = field(default_factory=list)
    stats: dict[str, dict[str, dict[str, Cell]]] = field(default_factory=dict)  # run name -> run_stats
    categories: dict[str, dict[str, dict[str, Cell]]] = field(default_factory=dict)  # run name -> category_stats
    tables: list[Table] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)
    show_sampling: bool = False  # set when the leaderboard also has groups of other sampling settings

    @property
    def title(self) -> str:
        tail = f" · {self.sampling}" if self.show_sampling or self.sampling != "T=0" else ""
        return f"{self.model} · {self.hardware} · {self.dtype}{tail}"

    def subtasks(self) -> list[str]:
        subs = {s for st in self.stats.values() for cells in st.values() for s in cells if s != OVERALL}
        return order_subtasks(subs)

    def rows(self) -> list[tuple[str, str, dict[str, Cell]]]:
        """(row label, method, cells) for every method of every run, sorted by Overall speedup; the settings
        of a method in one run (``rest``, ``rest@auto``) stay side by side, default first, placed by their best."""
        out = [(run_name, label, method, self.stats[run_name][method])
               for label, (run_name, method) in self.sources().items()]
        best: dict[tuple[str, str], float] = {}
        for run_name, _, method, cells in out:
            key = (run_name, method.partition("@")[0])
            best[key] = max(best.get(key, float("-inf")), _overall(method, cells))
        out.sort(key=lambda t: (-best[(t[0], t[2].partition("@")[0])], t[0], t[2].partition("@")[0], "@" in t[2],
                                -_overall(t[2], t[3])))
        return [(label, method, cells) for _, label, method, cells in out]

    def sources(self) -> dict[str, tuple[str, str]]:
        """Row label -> (run name, method); the label is ``method [run]`` when two runs share a method."""
        names = [m for st in self.stats.values() for m in st]
        return {(method if names.count(method) == 1 else f"{method} [{run_name}]"): (run_name, method)
                for run_name, st in self.stats.items() for method in st}


def _overall(method: str, cells: dict[str, Cell]) -> float:
    if method == BASELINE:
        return 1.0
    c = cells.get(OVERALL)
    return c.speedup if c is not None and c.speedup is not None else float("-inf")


def group_runs(runs: list[Run], n_boot: int, seed: int) -> list[Group]:
    """Group runs by (model, hardware, dtype, sampling) in first-seen order and compute their tables."""
    groups: dict[tuple[str, str, str, str], Group] = {}
    for run in runs:
        key = (model_label(run.manifest), hardware_label(run.manifest), dtype_label(run.manifest),
               sampling_label(run.manifest))
        g = groups.setdefault(key, Group(*key))
        g.runs.append(run)
        name = _unique_name(g, run)
        g.stats[name] = run_stats(run, n_boot, seed)
        g.categories[name] = category_stats(run, n_boot=n_boot, seed=seed)
    mixed = len({g.sampling for g in groups.values()}) > 1
    for g in groups.values():
        g.show_sampling = mixed
        g.tables = [main_table(g), details_table(g), *metric_tables(g), *batch_tables(g, n_boot, seed)]
        g.footer = footer_lines(g)
    return list(groups.values())


def batch_tables(g: Group, n_boot: int, seed: int) -> list[Table]:
    """Each run decoded at several batch sizes: its speedup vs batch size (``reports/batch_report.py``);
    the group's other tables show such a run at its leading batch size."""
    out = []
    for name, run in zip(g.stats, g.runs):
        if run.batch_sizes() != [1]:
            t = BR.speedup_table(run, BR.batch_stats(run, n_boot=n_boot, seed=seed))
            out.append(Table(f"{t.title}: {name}", t.headers, t.rows, t.keys))
    return out


def metric_tables(g: Group) -> list[Table]:
    """Latency and memory, per-position acceptance, accepted-length distribution, MT-Bench categories."""
    rows = g.rows()
    manifests = {name: run.manifest for name, run in zip(g.stats, g.runs)}
    sources = g.sources()
    overheads = {label: method_overhead(manifests[run_name], method) for label, (run_name, method) in sources.items()}
    cat_rows = [(label, method, g.categories[sources[label][0]].get(method) or {}) for label, method, _ in rows]
    cat_names = list(dict.fromkeys(c for _, _, cells in cat_rows for c in cells))
    tables = [MT.latency_table(rows, overheads), MT.position_table(rows), MT.histogram_table(rows),
              MT.category_table([r for r in cat_rows if r[2]], cat_names)]
    return [t for t in tables if t is not None]


def _unique_name(g: Group, run: Run) -> str:
    name, i = run.name, 2
    while name in g.stats:
        name, i = f"{run.name}#{i}", i + 1
    return name


def main_table(g: Group) -> Table:
    """Spec-Bench layout: Method | subtasks... | tau | Overall | Lossless."""
    subs = g.subtasks()
    headers = ["Method", *subs, "tau", OVERALL, "Lossless"]
    rows, keys = [], []
    for label, method, cells in g.rows():
        row, key = [label], [label]
        for sub in [*subs]:
            c = cells.get(sub)
            row.append(c.speedup_text() if c else "-")
            key.append(1.0 if c and method == BASELINE else (c.speedup if c else None))
        ov = cells.get(OVERALL)
        row.append(fmt_num(ov.tau if ov else None))
        key.append(ov.tau if ov else None)
        row.append(ov.speedup_text() if ov else "-")
        key.append(_overall(method, cells) if ov else None)
        status = lossless_status(cells, method)
        row.append(status)
        key.append(status)
        rows.append(row)
        keys.append(key)
    return Table("Speedup vs ar", headers, rows, keys)


def details_table(g: Group) -> Table:
    """Per method (Overall): tokens/s, tau, acceptance rate, mean draft size, time shares, questions."""
    headers = ["Method", "tokens/s", "tau", "acc. rate", "mean draft", "draft time", "verify time", "questions", "tokens"]
    rows, keys = [], []
    for label, _method, cells in g.rows():
        c = cells.get(OVERALL)
        if c is None:
            continue
        vals: list[Any] = [c.tokens_per_s, c.tau, c.acceptance_rate, c.mean_draft_size, c.draft_share, c.verify_share, c.n_questions, c.new_tokens]
        rows.append([
            label, fmt_num(c.tokens_per_s, "{:.1f}"), fmt_num(c.tau), fmt_num(c.acceptance_rate, "{:.1%}"),
            fmt_num(c.mean_draft_size, "{:.1f}"), fmt_num(c.draft_share, "{:.1%}"), fmt_num(c.verify_share, "{:.1%}"),
            str(c.n_questions), str(c.new_tokens),
        ])
        keys.append([label, *vals])
    return Table("Details (all subtasks pooled)", headers, rows, keys)


def footer_lines(g: Group) -> list[str]:
    """Hardware, versions, config and exact command of each run in the group."""
    lines = []
    for run in g.runs:
        m = run.manifest
        cfg = m.get("config") or {}
        brief = {k: cfg[k] for k in ("tasks", "limit", "max_new_tokens", "repeats", "dtype", "device", "shard") if k in cfg}
        lines.append(f"run `{run.name}`: {m.get('timestamp', '?')}, git {str(m.get('git_commit') or '?')[:12]}")
        if m.get("imported"):
            lines.append(str(m["imported"].get("note")))
        lines.append(f"hardware: {json.dumps(m.get('hardware') or {}, sort_keys=True)}")
        lines.append(f"versions: {json.dumps(m.get('versions') or {}, sort_keys=True)}")
        lines.append(f"model: {json.dumps(m.get('model') or {}, sort_keys=True)}")
        lines.append(f"backend: {json.dumps(m.get('backend') or {'name': backend_label(m)}, sort_keys=True)}")
        lines.append(f"config: {json.dumps(brief, sort_keys=True)}")
        if m.get("method_configs"):
            lines.append(f"method configs: {json.dumps(m['method_configs'], sort_keys=True)}")
        if m.get("task_versions"):
            lines.append(f"task versions: {json.dumps(m['task_versions'], sort_keys=True)}")
        if m.get("command"):
            cmd = m["command"] if isinstance(m["command"], str) else " ".join(map(str, m["command"]))
            lines.append(f"command: `{cmd}`")
    return lines


def prediction_table(g: Group, profile: dict[str, Any]) -> Table:
    """Predicted speedup from the profile's T(n) and the recorded draft sizes, draft and prefill times
    (``specbench.reports.prediction``), next to the measured one."""
    from specbench.profiling.cost_profile import cost_function
    from specbench.reports.prediction import prediction

    cost = cost_function(profile)
    headers = ["Method", "tau", "mean draft", "predicted", "measured"]
    rows, keys = [], []
    by_method: dict[tuple[str, str], list] = {}
    for run_name, run in zip(g.stats, g.runs):
        for r in run.records:
            by_method.setdefault((run_name, r.method), []).append(r)
    for label, (run_name, method) in g.sources().items():
        c = g.stats[run_name][method].get(OVERALL)
        if c is None or method == BASELINE:
            continue
        pm = prediction(by_method.get((run_name, method), []), by_method.get((run_name, BASELINE), []), cost)
        pred = None if pm is None else pm[0]
        rows.append([label, fmt_num(c.tau), fmt_num(c.mean_draft_size, "{:.1f}"), fmt_num(pred, "{:.2f}x"), c.speedup_text()])
        keys.append([label, c.tau, c.mean_draft_size, pred, c.speedup])
    return Table(f"Predicted (from the cost profile) vs measured speedup — {g.title}", headers, rows, keys)
