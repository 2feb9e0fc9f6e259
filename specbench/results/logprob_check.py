"""The distributional sanity check of sampling runs (temperature > 0), where token equality cannot hold.

Each sampled record carries ``target_logprob``: the mean log-probability, under the target's processed
sampling distribution, of the tokens it emitted. A lossless method samples from AR's distribution, so
its pooled mean log-probability per token matches AR's up to sampling noise; a method that favours its
drafts (a broken acceptance rule) emits likelier tokens and its mean rises.

Per method: the pooled mean (token-weighted over records) with a 95% bootstrap CI over questions, and
the ratio of its mean negative log-probability to AR's on the same units with a paired bootstrap CI
(``stats.paired_speedup`` with NLL sums in place of times). A method is flagged when that interval
excludes 1. It is a cheap screen, not a proof: the proof is the distributional test on tiny models
(``tests/test_sampling_lossless.py``).

>>> from specbench.results.record import Record
>>> mk = lambda m, q, lp: Record(m, "t", "T", "1", q, "", 1, 0, 1, 2, 1.0, 2, 0.0, 0.0, [1, 1], [0, 0],
...                              [0.0, 0.0], [1, 2], target_logprob=lp)
>>> rows = logprob_rows([mk("ar", "a", -1.0), mk("ar", "b", -2.0), mk("x", "a", -1.5), mk("x", "b", -1.5)], "x")
>>> rows.tolist()
[[3.0, 2.0, 2.0, 2.0], [3.0, 2.0, 4.0, 2.0]]
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from specbench.catalog import BASELINE
from specbench.results.record import Record
from specbench.results.loaded_run import Run
from specbench.results.stats import DEFAULT_BOOTSTRAP, DEFAULT_SEED, paired_speedup


@dataclass(frozen=True)
class LogprobCell:
    """One method's mean target log-probability per token and its comparison with AR."""

    method: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    ratio: float | None  # mean NLL / AR's mean NLL on the same units (None for AR)
    ratio_low: float | None
    ratio_high: float | None

    @property
    def flagged(self) -> bool:
        """The paired interval of the NLL ratio excludes 1: the method's tokens are likelier or less likely than AR's."""
        return self.ratio_low is not None and self.ratio_high is not None and not self.ratio_low <= 1 <= self.ratio_high

    def status(self) -> str:
        if self.method == BASELINE:
            return "baseline"
        if self.ratio_low is None:
            return "unchecked (needs 2+ questions)"
        return "CHECK: interval excludes AR" if self.flagged else "consistent with AR"


def logprob_rows(records: list[Record], method: str) -> np.ndarray:
    """Per question: [method NLL sum, method tokens, AR NLL sum, AR tokens] over units both sides have."""
    ar = {r.unit: r for r in records if r.method == BASELINE and r.target_logprob is not None}
    rows: dict[tuple[str, str], np.ndarray] = {}
    for r in records:
        a = ar.get(r.unit)
        if r.method != method or r.target_logprob is None or a is None:
            continue
        row = rows.setdefault((r.task, r.question_id), np.zeros(4))
        row += (-r.target_logprob * r.new_tokens, r.new_tokens, -a.target_logprob * a.new_tokens, a.new_tokens)
    return np.array([rows[k] for k in sorted(rows)]).reshape(len(rows), 4)


def logprob_stats(run: Run, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED) -> dict[str, LogprobCell]:
    """``{method: LogprobCell}`` for the methods of a sampling run (empty for a greedy run)."""
    by_subtask: dict[str, list[Record]] = defaultdict(list)
    for r in run.records:
        if r.target_logprob is not None:
            by_subtask[r.subtask].append(r)
    if not by_subtask:
        return {}
    out: dict[str, LogprobCell] = {}
    for method in run.methods():
        strata = [logprob_rows(recs, method) for recs in by_subtask.values()]
        strata = [s for s in strata if len(s)]
        if not strata:
            continue
        # the method's own mean: its NLL over its tokens, "paired" with a constant 1 / 1
        own = [np.stack([s[:, 0], s[:, 1], np.ones(len(s)), np.ones(len(s))], axis=1) for s in strata]
        nll, lo, hi = paired_speedup(own, n_boot, seed)
        if nll is None:
            continue
        ratio, r_lo, r_hi = (None, None, None) if method == BASELINE else paired_speedup(strata, n_boot, seed)
        out[method] = LogprobCell(method, -nll, None if hi is None else -hi, None if lo is None else -lo,
                                  ratio, r_lo, r_hi)
    return out


def logprob_table_rows(cells: dict[str, LogprobCell]) -> list[list[str]]:
    """Rows ``method | mean log-prob [95% CI] | NLL ratio vs AR [95% CI] | status`` for the report."""
    def interval(v: float | None, lo: float | None, hi: float | None) -> str:
        if v is None:
            return "-"
        return f"{v:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "")

    return [[m, interval(c.mean, c.ci_low, c.ci_high), interval(c.ratio, c.ratio_low, c.ratio_high), c.status()]
            for m, c in cells.items()]
