"""The tables of an engine under test that no other run has: its speculation counters, ours beside its own; its
speculation-off output and speed beside specbench's ``ar``; and its rows beside specbench's methods.

- **Counters, ours vs the engine's** (every record of a row, all concurrency levels, as the engine's counters
  count them). Ours, from the passes rebuilt from its stream (``serving/passes.py``): tau = tokens / forward
  passes (the prompt's and undrafted passes included), acceptance = accepted / drafted tokens, and tokens per
  drafted pass. The engine's, per request (the final event's ``draft_n_accepted / draft_n``, summed over the
  row's records) and from its ``/metrics`` counters since its warm-up (every invocation of the run added up):
  acceptance = accepted / draft tokens and mean accepted length = 1 + accepted / drafts (its steps with a draft
  only, which is why it reads above our tau whenever some steps draft nothing); and per draft position, the share
  of drafted steps that accepted it (ours from the passes, the engine's from its per-position counters).
- **engine:off vs ar**: on each unit both decoded alone, whether the engine's greedy output equals specbench's
  (another implementation of the same weights: float rounding may flip near-ties; this is a comparison, not a
  verdict), and the engine's tokens/s over ar's on the same questions (timed in the same run, interleaved).
- **Side by side**: specbench's methods against ``ar`` and the engine's rows against ``engine:off``, Overall; and
  each of our methods beside the engine's row of the same name, with the two loops' speed at equal tau
  (``engine_pairs.py``).

>>> tokens_per_drafted_pass([SimpleNamespace(accept_lengths=[1, 3, 1, 2], draft_sizes=[0, 4, 0, 2])])
2.5
"""
from __future__ import annotations

import json
from types import SimpleNamespace  # noqa: F401  (the doctest's records)
from typing import Any

from specbench.catalog import BASELINE, OVERALL
from specbench.reports.engine_pairs import pairs_section
from specbench.reports.numfmt import fmt_num
from specbench.reports.table import escaped_tabulate as tabulate  # every cell escaped for markdown and HTML
from specbench.reports.table import html_text
from specbench.results.lossless import first_divergence
from specbench.results.loaded_run import Run, engine_label
from specbench.results.request_acceptance import drafting_steps, mean_acceptance_length
from specbench.results.stats import Cell

COUNTERS_PATH = ("engine", "counters.json")


def tokens_per_drafted_pass(records: list[Any]) -> float | None:
    """Tokens emitted per forward pass that verified a draft (None when none did): vLLM's mean acceptance length."""
    return mean_acceptance_length([s for r in records for s in drafting_steps(r.accept_lengths, r.draft_sizes)])


def serving_counters(run: Run) -> dict[str, dict[str, Any]]:
    """Each engine row's ``/metrics`` counters since its warm-up (accepted tokens per draft position included),
    added up over the run's invocations."""
    path = run.path.joinpath(*COUNTERS_PATH)
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for entry in entries if isinstance(entries, list) else []:
        for label, c in ((entry or {}).get("counters") or {}).items():
            if isinstance(c, dict):
                total = out.setdefault(label, {"drafts": 0.0, "draft_tokens": 0.0, "accepted": 0.0,
                                               "accepted_per_position": []})
                for k in ("drafts", "draft_tokens", "accepted"):
                    total[k] += float(c.get(k) or 0.0)
                pos, add = total["accepted_per_position"], [float(x) for x in c.get("accepted_per_position") or []]
                total["accepted_per_position"] = [(pos[i] if i < len(pos) else 0.0) + (add[i] if i < len(add) else 0.0)
                                                  for i in range(max(len(pos), len(add)))]
    return out


def position_rows(run: Run, depth: int = 4) -> list[list[str]]:
    """Per engine row, the share of drafted steps that accepted draft position 1..``depth``: ours (the passes
    rebuilt) / the engine's ``/metrics`` (accepted tokens per position over its drafts)."""
    every, counters, rows = run.every or run.records, serving_counters(run), []
    for m in run.methods():
        if m == BASELINE:
            continue
        kept = [a - 1 for r in every if r.method == m for a, d in zip(r.accept_lengths, r.draft_sizes) if d]
        c = counters.get(m) or {}
        theirs, drafts = c.get("accepted_per_position") or [], c.get("drafts") or 0.0
        cells = [f"{fmt_num(sum(k >= i for k in kept) / len(kept) if kept else None)} / "
                 f"{fmt_num(theirs[i - 1] / drafts if drafts and i <= len(theirs) else None)}" for i in range(1, depth + 1)]
        rows.append([m, str(len(kept)), *cells])
    return rows


def _request_acceptance(records: list[Any]) -> float | None:
    made = sum(float((r.drafter_state or {}).get("draft_n") or 0) for r in records)
    kept = sum(float((r.drafter_state or {}).get("draft_n_accepted") or 0) for r in records)
    return kept / made if made else None


def counters_rows(run: Run, stats: dict[str, dict[str, Cell]]) -> list[list[str]]:
    """One row per engine row (``run``: the engine's view, all its records in ``every``)."""
    every = run.every or run.records
    counters = serving_counters(run)
    rows = []
    for m in run.methods():
        if m == BASELINE:
            continue
        recs = [r for r in every if r.method == m]
        drafted = sum(r.drafted for r in recs)
        passes = sum(r.forward_passes for r in recs)
        c = counters.get(m) or {}
        rows.append([m, fmt_num(sum(r.new_tokens for r in recs) / passes if passes else None),
                     fmt_num(sum(r.accepted for r in recs) / drafted if drafted else None),
                     fmt_num(tokens_per_drafted_pass(recs)), fmt_num(_request_acceptance(recs)),
                     fmt_num(c["accepted"] / c["draft_tokens"] if c.get("draft_tokens") else None),
                     fmt_num(1 + c["accepted"] / c["drafts"] if c.get("drafts") else None),
                     f"{int(c['drafts'])}" if c else "-"])
    return rows


COUNTER_HEADERS = ["row", "ours: tau", "ours: acceptance",
                   "ours: tokens / drafted pass (vLLM's mean acceptance length)",
                   "engine per request: acceptance", "engine /metrics: acceptance",
                   "engine /metrics: mean accepted length", "engine /metrics: drafts"]


def agreement_rows(own: Run, engine: Run) -> list[list[str]]:
    """Per subtask and Overall: units compared, outputs identical, median first divergence, tokens/s ratio."""
    ar = {r.unit: r for r in own.records if r.method == BASELINE and r.repeat == 0 and r.unit.batch == 1}
    off = {r.unit: r for r in engine.records if r.method == BASELINE and r.repeat == 0 and r.unit.batch == 1}
    pairs = [(ar[u], off[u]) for u in sorted(set(ar) & set(off))]
    rows = []
    for sub in [s for s in own.subtasks() if any(a.subtask == s for a, _ in pairs)] + [OVERALL]:
        got = [(a, o) for a, o in pairs if sub == OVERALL or a.subtask == sub]
        if not got:
            continue
        same = sum(a.output_ids == o.output_ids for a, o in got)
        divs = sorted(d for a, o in got if (d := first_divergence(a.output_ids, o.output_ids)) is not None)
        speed = (sum(o.new_tokens for _, o in got) / sum(o.wall_time_s for _, o in got)) / \
                (sum(a.new_tokens for a, _ in got) / sum(a.wall_time_s for a, _ in got))
        rows.append([sub, str(len(got)), f"{same} / {len(got)}", str(divs[len(divs) // 2]) if divs else "-",
                     f"{speed:.2f}x"])
    return rows


def side_by_side_rows(own_stats: dict[str, dict[str, Cell]], engine_stats: dict[str, dict[str, Cell]]) -> list[list[str]]:
    """Overall speedup (against each row's own baseline), tau, acceptance and tokens/s of every row of the run."""
    rows = []
    for baseline, stats in (("ar", own_stats), ("engine:off", engine_stats)):
        for m, cells in stats.items():
            c = cells.get(OVERALL)
            if c is None:
                continue
            label = baseline if m == BASELINE else m
            rows.append([label, "1.00x (baseline)" if m == BASELINE else f"{c.speedup_text()} vs {baseline}",
                         fmt_num(c.tau), fmt_num(c.acceptance_rate), fmt_num(c.tokens_per_s, "{:.1f}")])
    return rows


def serving_section(own: Run, engine: Run, engine_stats: dict[str, dict[str, Cell]],
                    own_stats: dict[str, dict[str, Cell]], rendered: str, fmt: str = "github") -> str:
    """The report's section of the engine under test: its own tables (``rendered``: the report's tables of its
    view), then this module's."""
    label = engine_label(engine.manifest)
    parts = [f"## Engine under test: {html_text(label)}",  # (its version: what the engine's binary printed)
             "Its rows are `engine:SETTING`, each timed and checked against the same engine with speculation off "
             "(`engine:off`, the row `ar` of this section's tables), on the same prompts (token ids) as specbench's "
             "own rows, question by question in the same run. The engine does not say how long it drafts, so "
             "no drafting share is shown; its passes are rebuilt from the counters it streams.",
             rendered.strip()]
    rows = counters_rows(engine, engine_stats)
    if rows:
        parts.append("### Speculation counters: ours vs the engine's own\n\n"
                     + tabulate(rows, headers=COUNTER_HEADERS, tablefmt=fmt))
    positions = position_rows(engine)
    if positions:
        parts.append("### Accepted by draft position, ours / the engine's /metrics (share of drafted steps)\n\n"
                     + tabulate(positions, headers=["row", "drafted steps (ours)"] + [f"position {i}" for i in range(1, 5)],
                                tablefmt=fmt))
    agree = agreement_rows(own, engine)
    if agree:
        parts.append("### engine:off vs specbench's ar (both alone; a comparison of two implementations, not a verdict)"
                     "\n\n" + tabulate(agree, headers=["subtask", "units", "identical outputs", "median first divergence",
                                                       "engine:off tokens/s / ar's"], tablefmt=fmt))
    if len(own_stats) > 1:
        parts.append("### The engine's speculation beside specbench's methods (Overall)\n\n"
                     + tabulate(side_by_side_rows(own_stats, engine_stats),
                                headers=["row", "speedup", "tau", "acceptance", "tokens/s"], tablefmt=fmt))
    paired = pairs_section(own_stats, engine_stats, fmt)  # our drafters beside the engine's same setting
    if paired:
        parts.append(paired)
    return "\n\n".join(parts) + "\n"
