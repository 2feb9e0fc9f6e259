"""Speedups against input length: the tables of a run with long-input tasks (``--context-length``).

One row per tier and length (``results/context_lengths.py``), one column per method:

- **speedup vs AR** with its 95% CI, end to end (prefill included), next to the prompt length built and the
  share of AR's time its prefill took: the prefill is the same forward for every method, so where it
  dominates (long prompts on a CPU) every speedup is pulled towards 1;
- **decode-only speedup**: decode tokens per second (after the first token) over AR's, the part speculative
  decoding acts on;
- **tau** (tokens per forward pass) and **time to first token** (ms), each apart;
- with a cost profile (``profile.json``: runs with ``budget=auto`` methods), the cost model's predicted
  speedup against the measured one at each length (``reports/prediction.py``).

Example row: ``Long-low | 8k | 7936 | 93% | 1.08x ±0.02`` reads: prompts of 7936 tokens (8k cut to fit),
AR spent 93% of its time in the prefill, the method's end-to-end speedup is 1.08x.
"""
from __future__ import annotations

from typing import Any, Callable

from specbench.catalog import BASELINE
from specbench.config.context_length import length_label
from specbench.reports.numfmt import fmt_num
from specbench.reports.prediction import Cost, prediction
from specbench.reports.table import Table
from specbench.results.context_lengths import LengthGroup
from specbench.results.stats import Cell

Stats = dict[str, dict[str, Cell]]


def _rows(groups: list[LengthGroup], methods: list[str], value: Callable[[str, LengthGroup], Any],
          text: Callable[[Any], str]) -> tuple[list[list[str]], list[list[Any]]]:
    """Rows ``tier, length, text(value(method, group)) per method`` and their sort keys."""
    rows, keys = [], []
    for g in groups:
        vals = [value(m, g) for m in methods]
        rows.append([g.tier, length_label(g.length), *(text(v) for v in vals)])
        keys.append([g.tier, g.length, *vals])
    return rows, keys


def _cell(stats: Stats, method: str, g: LengthGroup) -> Cell | None:
    return stats.get(method, {}).get(g.subtask)


def decode_speedup(stats: Stats, method: str, g: LengthGroup) -> float | None:
    """Decode tokens/s of ``method`` over AR's in group ``g`` (None without both)."""
    c, a = _cell(stats, method, g), _cell(stats, BASELINE, g)
    if c is None or a is None or not c.latency.decode_tokens_per_s or not a.latency.decode_tokens_per_s:
        return None
    return c.latency.decode_tokens_per_s / a.latency.decode_tokens_per_s


def length_tables(groups: list[LengthGroup], methods: list[str], stats: Stats) -> list[Table]:
    """Speedup, decode-only speedup, tau and TTFT by tier and input length (rows) per method (columns)."""
    if not groups:
        return []
    drafting = [m for m in methods if m != BASELINE]
    head = ["tier", "length"]
    speed_rows, speed_keys = [], []
    for g in groups:
        cells = [_cell(stats, m, g) for m in drafting]
        share = g.ar_prefill_share
        speed_rows.append([g.tier, length_label(g.length), f"{g.prompt_tokens:.0f}", fmt_num(share, "{:.0%}"),
                           *(c.speedup_text() if c else "-" for c in cells)])
        speed_keys.append([g.tier, g.length, g.prompt_tokens, share, *(c.speedup if c else None for c in cells)])
    tables = [Table("Speedup vs AR by input length, end to end (prefill included; the prefill is the same for every "
                    "method and dominates long prompts on a CPU: see AR's prefill share), 95% bootstrap CI",
                    [*head, "prompt tokens", "AR prefill share", *drafting], speed_rows, speed_keys)]
    decode = _rows(groups, drafting, lambda m, g: decode_speedup(stats, m, g), lambda v: fmt_num(v, "{:.2f}x"))
    tables.append(Table("Decode-only speedup vs AR by input length (decode tokens/s after the first token over AR's; "
                        "prefill excluded)", [*head, *drafting], *decode))
    tau = _rows(groups, methods, lambda m, g: getattr(_cell(stats, m, g), "tau", None),
                lambda v: fmt_num(v, "{:.2f}"))
    tables.append(Table("Mean tokens per forward pass (tau) by input length", [*head, *methods], *tau))
    ttft = _rows(groups, methods, lambda m, g: getattr(getattr(_cell(stats, m, g), "latency", None),
                                                             "ttft_mean_s", None),
                 lambda v: fmt_num(None if v is None else v * 1e3, "{:.0f}"))
    tables.append(Table("Time to first token (ms, mean) by input length: the prefill, apart from decode speed",
                        [*head, *methods], *ttft))
    return tables


def length_prediction_table(groups: list[LengthGroup], methods: list[str], cost: Cost) -> Table | None:
    """Per tier and length, each method's ``predicted / measured speedup (error)`` from the run's cost profile."""
    drafting = [m for m in methods if m != BASELINE]
    rows, keys = [], []
    for g in groups:
        ar = [r for r in g.records if r.method == BASELINE]
        row, key = [g.tier, length_label(g.length)], [g.tier, g.length]
        for m in drafting:
            pm = prediction([r for r in g.records if r.method == m], ar, cost)
            err = None if pm is None else pm[0] / pm[1] - 1
            row.append("-" if pm is None else f"{pm[0]:.2f}x / {pm[1]:.2f}x ({100 * err:+.1f}%)")
            key.append(err)
        rows.append(row)
        keys.append(key)
    if not rows:
        return None
    return Table("Cost model by input length: predicted / measured speedup (prediction error), from this run's "
                 "cost profile T(n, context), recorded draft sizes, draft times and prefill", ["tier", "length",
                                                                                              *drafting], rows, keys)
