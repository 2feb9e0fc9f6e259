"""Our drafters beside the engine's same setting: tau, speedup and the two loops' speed at equal tau.

When a run has one of specbench's methods and an engine row of the same name (``ngram-simple`` and
``engine:ngram-simple``, ``ngram-simple@pld`` and ``engine:ngram-simple@pld``: the same algorithm, written once
in Python on specbench's engine and once in the engine's own loop), each such pair gets a row: tau both ways,
speedup both ways (ours against ``ar``, the engine's against ``engine:off``), tokens/s both ways, and the
**loop ratio**: our tokens/s over the engine's, each divided by its tau,

    loop ratio = (ours tokens/s / ours tau) / (engine tokens/s / engine tau)

that is each loop's tokens/s brought to the same tau (the forward passes each loop makes per second). 1.00: the
loops are equally fast; 0.97: ours is 3% slower per pass, specbench's loop overhead on that backend. It reads as
overhead only where both loops run the same library (``--backend llamacpp`` beside llama-server); passes that
verify longer drafts cost more, so it assumes both loops draft alike (tau within a few percent). The first row
is the baselines, ``ar`` beside ``engine:off`` (tau 1 both): the loops' ratio without drafting.

>>> C = lambda tau, tps, s=None: SimpleNamespace(tau=tau, tokens_per_s=tps, speedup=s)
>>> own = {"ar": {"Overall": C(1.0, 20.0)}, "ngram-simple": {"Overall": C(1.5, 27.0, 1.35)}, "pld": {"Overall": C(1.4, 25.0, 1.2)}}
>>> engine = {"ar": {"Overall": C(1.0, 21.0)}, "engine:ngram-simple": {"Overall": C(1.6, 30.0, 1.43)}}
>>> pairs(own, engine)
[('ar', 'engine:off'), ('ngram-simple', 'engine:ngram-simple')]
>>> [row[-1] for row in pair_rows(own, engine)]  # (20 / 1) / (21 / 1); (27 / 1.5) / (30 / 1.6)
['0.95', '0.96']
"""
from __future__ import annotations

from types import SimpleNamespace  # noqa: F401  (the doctest's cells)
from typing import Any

from specbench.catalog import BASELINE, ENGINE_BASELINE, ENGINE_PREFIX, OVERALL
from specbench.reports.numfmt import fmt_num
from specbench.reports.table import escaped_tabulate as tabulate  # every cell escaped for markdown and HTML

HEADERS = ["ours", "engine", "tau: ours", "tau: engine", "speedup: ours (vs ar)", "speedup: engine (vs engine:off)",
           "tokens/s: ours", "tokens/s: engine", "loop ratio at equal tau (ours / engine)"]


def pairs(own_stats: dict[str, Any], engine_stats: dict[str, Any]) -> list[tuple[str, str]]:
    """(our label, the engine's label) for each of our methods with an engine row of the same name, the
    baselines first (the engine's view names ``engine:off`` ``ar``), in our methods' order; [] without any
    method pair (the baselines alone are no comparison of drafters)."""
    found = [(m, ENGINE_PREFIX + m) for m in own_stats if m != BASELINE and ENGINE_PREFIX + m in engine_stats]
    return [(BASELINE, ENGINE_BASELINE)] + found if found and BASELINE in own_stats and BASELINE in engine_stats \
        else found


def loop_ratio(ours: Any, theirs: Any) -> float | None:
    """Our tokens/s over the engine's, each divided by its tau (None when a figure is missing or zero)."""
    if not (ours.tau and theirs.tau and ours.tokens_per_s and theirs.tokens_per_s):
        return None
    return (ours.tokens_per_s / ours.tau) / (theirs.tokens_per_s / theirs.tau)


def _speedup(cell: Any, baseline: bool) -> str:
    if baseline:
        return "1.00x (baseline)"
    text = getattr(cell, "speedup_text", None)
    return text() if callable(text) else (f"{cell.speedup:.2f}x" if cell.speedup is not None else "-")


def pair_rows(own_stats: dict[str, Any], engine_stats: dict[str, Any]) -> list[list[str]]:
    """One row per pair, Overall cells (a pair missing either Overall cell is left out)."""
    rows = []
    for ours, theirs in pairs(own_stats, engine_stats):
        a = own_stats[ours].get(OVERALL)
        b = engine_stats[BASELINE if theirs == ENGINE_BASELINE else theirs].get(OVERALL)
        if a is None or b is None:
            continue
        base = ours == BASELINE
        rows.append([ours, theirs, fmt_num(a.tau), fmt_num(b.tau), _speedup(a, base), _speedup(b, base),
                     fmt_num(a.tokens_per_s, "{:.1f}"), fmt_num(b.tokens_per_s, "{:.1f}"), fmt_num(loop_ratio(a, b))])
    return rows


def pairs_section(own_stats: dict[str, Any], engine_stats: dict[str, Any], fmt: str = "github") -> str | None:
    """The report's section of those pairs, or None when the run has none."""
    rows = pair_rows(own_stats, engine_stats)
    if not any(r[0] != BASELINE for r in rows):
        return None
    return ("### Our drafters beside the engine's same setting (Overall)\n\n"
            "Each of specbench's methods beside the engine's row of the same name (`NAME` and `engine:NAME`). "
            "Loop ratio: our tokens/s over the engine's, each divided by its tau (the passes each loop makes per "
            "second); below 1.00, specbench's loop is slower by that share (its overhead where both run the same "
            "library), read where both taus agree.\n\n"
            + tabulate(rows, headers=HEADERS, tablefmt=fmt, disable_numparse=True))  # ("0.80" as written)
