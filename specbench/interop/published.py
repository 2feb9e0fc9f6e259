"""Spec-Bench's published leaderboard as reference data: ``spec-bench:<gpu>-<model>`` tables.

The numbers are Spec-Bench's ``Leaderboard.md`` at the commit named in ``published/spec_bench.json``
(regenerate with ``scripts/import_spec_bench_leaderboard.py``), kept exactly as published: per method
the speedup on each of its six subtasks (mapped to specbench's task labels: Multi-turn Conversation ->
MT-Bench, Translation -> WMT, Summarization -> CNN/DM, Question Answering -> NQ, Mathematical Reasoning
-> GSM8K, Retrieval-aug. Generation -> NQ-RAG), the Overall speedup and the mean accepted tokens per step.
Published rows are shown beside a run's, never pooled into its statistics.

Example::

    >>> t = load_published("spec-bench:a100-vicuna-7b")
    >>> t.row("eagle")["published_name"], t.row("eagle")["speedup"]["MT-Bench"]
    ('EAGLE2', '2.84x')
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from specbench.catalog import OVERALL
from specbench.errors import ConfigError
from specbench.reports.table import Table
from specbench.results.spec_bench_speedup import SPEC_BENCH_DEFINITION
from specbench.results.stats import Cell

DATA = Path(__file__).with_name("published") / "spec_bench.json"
TAU = "mean accepted tokens"


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def published_names() -> list[str]:
    return sorted(_data()["tables"])


@dataclass(frozen=True)
class PublishedTable:
    name: str
    gpu: str
    model: str
    notes: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    source: str

    def row(self, method: str) -> dict[str, Any] | None:
        """The published row of a specbench method label (``eagle`` = EAGLE-2, ``eagle@static`` = EAGLE-1)."""
        return next((r for r in self.rows if r["method"] == method), None)

    def subtasks(self) -> list[str]:
        return list(self.rows[0]["speedup"]) if self.rows else []


def load_published(name: str) -> PublishedTable:
    """A published table by name; a one-line error naming the known ones."""
    tables = _data()["tables"]
    if name not in tables:
        raise ConfigError(f"unknown reference {name!r} (known: {', '.join(published_names())})")
    t = tables[name]
    src = _data()["source"]
    return PublishedTable(name, t["gpu"], t["model"], tuple(t["notes"]), tuple(t["rows"]),
                          f"{src['repository']} {src['file']} at {src['commit'][:7]}")


def _number(text: str | None) -> float | None:
    return None if text in (None, "") else float(str(text).rstrip("x"))


def _ratio(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def run_vs_published(stats: dict[str, dict[str, Cell]], ref: PublishedTable, run_name: str,
                     spec_bench: dict[str, dict[str, float | None]]) -> Table:
    """Per method and subtask: the run's speedup (pooled, specbench's), the same in Spec-Bench's definition
    (``spec_bench``: ``results.spec_bench_speedup.spec_bench_speedups``), the published one and their ratio
    in Spec-Bench's definition, so it compares like with like; the mean accepted tokens (tau) in a last line
    per method. Only methods and subtasks both sides have are listed."""
    rows, keys = [], []
    for method, cells in stats.items():
        pub = ref.row(method)
        if pub is None:
            continue
        for sub in ref.subtasks() + [OVERALL, TAU]:
            if sub == TAU:
                cell, theirs = cells.get(OVERALL), _number(pub["mean_accepted_tokens"])
                mine = like = None if cell is None else cell.tau  # (tau has one definition here)
                shown = pub["mean_accepted_tokens"]
            else:
                cell = cells.get(sub)
                mine = None if cell is None else cell.speedup
                like = (spec_bench.get(method) or {}).get(sub)
                shown = pub["overall"] if sub == OVERALL else pub["speedup"][sub]
                theirs = _number(shown)
            if mine is None:
                continue
            yours = f"{mine:.2f}" if sub == TAU else f"{mine:.2f}x"
            theirs_def = "" if sub == TAU or like is None else f"{like:.2f}x"
            rows.append([method, pub["published_name"], sub, yours, theirs_def, shown, _ratio(like, theirs)])
            keys.append([method, pub["published_name"], sub, mine, None if sub == TAU else like, theirs,
                         like / theirs if like is not None and theirs else None])
    return Table(f"{run_name} vs {ref.name} (published: {ref.model}, {ref.gpu}; {ref.source})",
                 ["method", "published as", "subtask", "yours (pooled)", f"yours ({SPEC_BENCH_DEFINITION})",
                  "published", "yours/published (Spec-Bench's definition)"], rows, keys)


def published_vs_published(a: PublishedTable, b: PublishedTable) -> Table:
    """Two published tables side by side (e.g. RTX 3090 vs A100 on Vicuna-7B): A, B and B/A per cell."""
    rows, keys = [], []
    for ra in a.rows:
        rb = next((r for r in b.rows if r["published_name"] == ra["published_name"]), None)
        if rb is None:
            continue
        pairs = [(s, ra["speedup"][s], rb["speedup"].get(s)) for s in a.subtasks()]
        pairs += [(OVERALL, ra["overall"], rb["overall"]), (TAU, ra["mean_accepted_tokens"], rb["mean_accepted_tokens"])]
        for sub, x, y in pairs:
            rows.append([ra["published_name"], sub, x, y or "", _ratio(_number(y), _number(x))])
            keys.append([ra["published_name"], sub, _number(x), _number(y), None])
    return Table(f"{a.name} vs {b.name} (both published; {a.source})",
                 ["method", "subtask", a.name, b.name, "B/A"], rows, keys)


def published_table(ref: PublishedTable) -> Table:
    """A published table as Spec-Bench prints it (rows marked published), for the leaderboard."""
    subs = ref.subtasks()
    rows = [[f"{r['published_name']} (published)"] + [r["speedup"][s] for s in subs] + [r["mean_accepted_tokens"], r["overall"]]
            for r in ref.rows]
    keys = [[r["published_name"]] + [_number(r["speedup"][s]) for s in subs] + [_number(r["mean_accepted_tokens"]),
                                                                             _number(r["overall"])] for r in ref.rows]
    title = f"Published: {ref.name} ({ref.model}, {'; '.join(ref.notes)}; {ref.source})"
    return Table(title, ["method"] + subs + ["tau", OVERALL], rows, keys)
