"""Spec-Bench's own speedup definition, used only where a run is put beside its published leaderboard.

Spec-Bench's ``evaluation/speed.py`` (hemingkx/Spec-Bench at fd2c1cd) computes, per subtask and for
"overall" (all questions at once, not per subtask)::

    speedup = mean over questions of (question tokens / question seconds) for the method
            / the same mean for the vanilla (AR) baseline

a question's tokens and seconds summed over its turns first (MT-Bench has two); its three-run script
averages the runs' ratios. specbench's own speedup (``stats``) pools instead: all tokens over all time.
The two differ when questions differ in length and speed: the mean of per-question speeds weighs every
question alike, the pooled ratio weighs each by its time, so long answers count more.

Here each repeat is one of Spec-Bench's runs; only the units (question, turn, repeat) both sides have
count, and tokens are ``new_tokens`` on both sides (Spec-Bench re-tokenises AR's text).

Example: a short fast question and a long slow one::

    >>> from specbench.results.record import Record
    >>> def rec(method, qid, tokens, secs): return Record(method=method, task="gsm8k", subtask="GSM8K",
    ...     task_version="1", question_id=qid, category="", turn=1, repeat=0, prompt_tokens=1, new_tokens=tokens,
    ...     wall_time_s=secs, forward_passes=tokens, draft_time_s=0.0, verify_time_s=0.0)
    >>> mine = [rec("pld", "1", 8, 0.125), rec("pld", "2", 128, 4.0)]      # 64 and 32 tokens/s
    >>> ar = [rec("ar", "1", 8, 0.25), rec("ar", "2", 128, 16.0)]          # 32 and 8 tokens/s
    >>> spec_bench_speedup(mine, ar)                                        # 48 / 20; pooled: 3.94
    2.4
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from specbench.catalog import BASELINE, OVERALL
from specbench.results.record import Record, Unit
from specbench.results.loaded_run import Run

SPEC_BENCH_DEFINITION = "Spec-Bench's mean of per-question tok/s"

_Questions = dict[tuple[str, str], list[float]]  # (task, question) -> [tokens, seconds] summed over its turns


def _per_question(recs: Iterable[Record], units: set[Unit]) -> dict[tuple[int, int], _Questions]:
    """Per Spec-Bench-like run (repeat, batch size): each question's tokens and seconds over its turns."""
    out: dict[tuple[int, int], _Questions] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for r in recs:
        if r.unit in units:
            sums = out[(r.repeat, r.unit.batch)][(r.task, r.question_id)]
            sums[0] += r.new_tokens
            sums[1] += r.wall_time_s
    return out


def _mean_speed(questions: _Questions) -> float | None:
    """Mean over questions of tokens / seconds; None when a question has no time (undefined there too)."""
    if not questions or any(secs <= 0 for _, secs in questions.values()):
        return None
    return sum(tokens / secs for tokens, secs in questions.values()) / len(questions)


def spec_bench_speedup(method_recs: Iterable[Record], ar_recs: Iterable[Record]) -> float | None:
    """Spec-Bench's speedup of a method over AR on these records (module docstring); None without paired
    questions or where a question took no time."""
    method_recs, ar_recs = list(method_recs), list(ar_recs)
    units = {r.unit for r in method_recs} & {r.unit for r in ar_recs}
    mine, base = _per_question(method_recs, units), _per_question(ar_recs, units)
    ratios = []
    for run_key in sorted(mine):
        m, a = _mean_speed(mine[run_key]), _mean_speed(base[run_key])
        if m is None or not a:
            return None
        ratios.append(m / a)
    return sum(ratios) / len(ratios) if ratios else None


def spec_bench_speedups(run: Run, subtasks: Iterable[str] | None = None) -> dict[str, dict[str, float | None]]:
    """``{method: {subtask | "Overall": speedup}}`` in Spec-Bench's definition for every method but AR;
    ``subtasks`` limits the subtasks and what "Overall" pools (a published table's six), all by default."""
    keep = set(subtasks) if subtasks is not None else set(run.subtasks())
    by: dict[str, list[Record]] = defaultdict(list)
    for r in run.records:
        if r.subtask in keep:
            by[r.method].append(r)
    out: dict[str, dict[str, float | None]] = {}
    for method in run.methods():
        if method == BASELINE or method not in by:
            continue
        cells = {sub: spec_bench_speedup([r for r in by[method] if r.subtask == sub],
                                         [r for r in by[BASELINE] if r.subtask == sub])
                 for sub in run.subtasks() if sub in keep}
        cells[OVERALL] = spec_bench_speedup(by[method], by[BASELINE])
        out[method] = cells
    return out
