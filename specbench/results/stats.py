"""Statistics of a run folder: paired speedups with bootstrap CIs, tau, acceptance, time shares.

Definitions (all pooled over records, never averages of per-question ratios):
- speedup of method M on a set of questions Q = (sum M tokens / sum M time) / (sum AR tokens / sum AR time),
  sums over the (task, question, turn, repeat) units both M and AR have in Q; tokens = ``new_tokens``
  (``len(output_ids)``) on both sides, time = ``wall_time_s``.
- 95% CI: paired bootstrap over questions. Resample the questions of each subtask with replacement
  (``B`` times, fixed seed), recompute the pooled ratio with M and AR summed over the *same* resampled
  questions, take the 2.5 / 97.5 percentiles. "Overall" resamples within every subtask (stratified).
  Questions decoded in one batch (``--batch-size`` > 1) share its time equally, so they are not
  independent draws: they are resampled together, as one unit per batch (``_batch_clusters``). A subtask
  decoded as a single batch has one unit: no interval, rather than a zero-width one.
- tau = tokens emitted / forward passes (prefill included, so AR is exactly 1.0).
- acceptance rate = accepted draft tokens / drafted tokens (``sum(accept_lengths - 1) / sum(draft_sizes)``
  over decode passes); mean draft size = drafted tokens / decode passes (passes after the prefill).
- draft / verify share = ``draft_time_s`` / ``wall_time_s`` and ``verify_time_s`` / ``wall_time_s``.
- TTFT, decode-only tokens/s, per-token latency percentiles: ``specbench.results.latency``; per-position
  acceptance and the accepted-length histogram: ``specbench.results.acceptance``; per request (vLLM's mean acceptance
  length, tau) and TPOT / ITL / E2E: ``results.request_acceptance``, ``results.latency_percentiles``; peak memory = the
  largest ``peak_memory_bytes`` of the cell's records (None when none recorded it).
- MT-Bench categories (``category_stats``): the same cells with the records of one category each.
- plausibility (``specbench.results.plausibility``): each cell's ``tau_ceiling``, the most speedup its passes
  allow, ``speedup_floor``, the least its work explains, and ``implausible``, the one-line reason when its speedup
  is above the one or below the other beyond the margin.
Spec-Bench's own definition (mean of per-question speeds over AR's), shown only beside its published
table: ``specbench.results.spec_bench_speedup``.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from specbench.catalog import BASELINE, OVERALL, order_categories
from specbench.results.acceptance import AcceptanceProfile, record_profile
from specbench.results.latency import LatencyStats, latency_stats
from specbench.results.latency_percentiles import LatencyPercentiles, latency_percentiles
from specbench.results.lossless import LOSSLESS_CLASSES
from specbench.results.record import Record, Unit
from specbench.results.request_acceptance import RequestAcceptance, request_acceptance
from specbench.results.loaded_run import Run
from specbench.results.cell_flags import IMPLAUSIBLE, Flag, flag_cells, marks
from specbench.results.plausibility import judge, speedup_floor, tau_ceiling

DEFAULT_BOOTSTRAP = 2000
DEFAULT_SEED = 20240521


@dataclass
class Cell:
    """Statistics of one method on one subtask (or ``Overall``) of one run."""

    method: str
    subtask: str
    n_questions: int
    speedup: float | None  # None for the baseline or without paired AR data
    ci_low: float | None
    ci_high: float | None
    tau: float
    acceptance_rate: float | None  # None when nothing was drafted
    mean_draft_size: float
    draft_share: float
    verify_share: float
    tokens_per_s: float
    new_tokens: int
    wall_time_s: float
    draft_time_s: float
    lossless: dict[str, int] = field(default_factory=dict)  # {"exact": n, "tie": n, "mismatch": n}
    latency: LatencyStats = field(default_factory=LatencyStats)
    acceptance: AcceptanceProfile = field(default_factory=AcceptanceProfile)
    requests: RequestAcceptance = field(default_factory=RequestAcceptance)  # per request, vLLM's definition too
    percentiles: LatencyPercentiles = field(default_factory=LatencyPercentiles)  # TPOT, ITL, E2E p50/p95/p99
    peak_memory_bytes: int | None = None
    peak_memory_kind: str | None = None
    sampled: bool = False  # records sampled at temperature > 0: no token check, see ``logprob_check``
    tau_ceiling: float | None = None  # the most speedup the passes allow (``plausibility``); None: not bounded
    speedup_floor: float | None = None  # the least speedup its work explains (``plausibility``); None: not bounded
    implausible: str | None = None  # why the speedup is above that ceiling or below that floor (``judge``), else None
    flags: tuple[Flag, ...] = ()  # why the figure is not a plain measurement (``cell_flags``), implausible first

    def speedup_text(self) -> str:
        """``1.42x ±0.05`` (± = half the CI width), ``1.00x`` for the baseline, ``-`` without data; an implausible
        speedup says so (``8.10x ±3.50 (implausible)``), and so does every other flag (``1.21x (stalled)``)."""
        if self.method == BASELINE:
            return "1.00x"
        if self.speedup is None:
            return "-"
        ci = "" if self.ci_low is None or self.ci_high is None else f" ±{(self.ci_high - self.ci_low) / 2:.2f}"
        rest = marks(f for f in self.flags if f.kind != IMPLAUSIBLE)
        return f"{self.speedup:.2f}x{ci}" + (" (implausible)" if self.implausible else "") + rest


def _sums(recs: list[Record]) -> dict[str, float]:
    s: dict[str, float] = defaultdict(float)
    for r in recs:
        s["tokens"] += r.new_tokens
        s["time"] += r.wall_time_s
        s["draft_time"] += r.draft_time_s
        s["verify_time"] += r.verify_time_s
        s["passes"] += r.forward_passes
        s["decode_passes"] += r.decode_passes
        s["drafted"] += r.drafted
        s["accepted"] += r.accepted
    return s


def _questions(recs: Iterable[Record]) -> set[tuple[str, str]]:
    return {(r.task, r.question_id) for r in recs}


def _batch_clusters(recs: Iterable[Record]) -> dict[tuple[str, str], tuple[str, str]]:
    """Each question's resampling unit: questions that shared a batched generation (same method, task,
    turn, repeat, batch size and batch time: one ``BatchJob``) are joined, across turns and both sides of
    a pair; a question never batched is its own unit. The unit is named by its smallest question.

    >>> from specbench.results.record import Record
    >>> def rec(q, wall): return Record(method="ar", task="t", subtask="T", task_version="1", question_id=q, category="c",
    ...     turn=1, repeat=0, prompt_tokens=1, new_tokens=1, wall_time_s=wall / 2, forward_passes=1,
    ...     draft_time_s=0.0, verify_time_s=0.0, accept_lengths=[1], output_ids=[1], batch_size=2,
    ...     batch_wall_time_s=wall)
    >>> sorted(_batch_clusters([rec("1", 0.5), rec("2", 0.5), rec("3", 0.7)]).items())
    [(('t', '1'), ('t', '1')), (('t', '2'), ('t', '1')), (('t', '3'), ('t', '3'))]
    """
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(q: tuple[str, str]) -> tuple[str, str]:
        while parent.setdefault(q, q) != q:
            q = parent[q]
        return q

    jobs: dict[tuple, tuple[str, str]] = {}
    for r in recs:
        q = root((r.task, r.question_id))
        if not r.batch_size or r.batch_size < 2 or r.batch_wall_time_s is None:
            continue
        first = jobs.setdefault((r.method, r.task, r.turn, r.repeat, r.batch_size, r.batch_wall_time_s), q)
        a, b = root(first), q
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {q: root(q) for q in list(parent)}


def _paired_arrays(method_recs: list[Record], ar_recs: list[Record]) -> tuple[list[tuple], np.ndarray]:
    """Per resampling unit (a question, or the questions of one batch, ``_batch_clusters``):
    [method tokens, method time, AR tokens, AR time] over units both sides have."""
    ar_by_unit: dict[Unit, Record] = {r.unit: r for r in ar_recs}
    cluster = _batch_clusters([*method_recs, *ar_recs])
    rows: dict[tuple, np.ndarray] = {}
    for r in method_recs:
        a = ar_by_unit.get(r.unit)
        if a is None:
            continue
        row = rows.setdefault(cluster.get((r.task, r.question_id), (r.task, r.question_id)), np.zeros(4))
        row += (r.new_tokens, r.wall_time_s, a.new_tokens, a.wall_time_s)
    keys = sorted(rows)
    return keys, np.array([rows[k] for k in keys]).reshape(len(keys), 4)


def paired_rows(method_recs: list[Record], ar_recs: list[Record]) -> np.ndarray:
    """``[n_questions, 4]`` rows (method tokens, method time, AR tokens, AR time) for ``paired_speedup``;
    any second setting can stand in for AR (auto vs default in ``budget_report``)."""
    return _paired_arrays(method_recs, ar_recs)[1]


def _ratio(x: np.ndarray) -> np.ndarray:
    """Pooled speedup along the last axis-0 sums: x[..., 4] summed -> (mt/mT) / (at/aT)."""
    return (x[..., 0] / x[..., 1]) / (x[..., 2] / x[..., 3])


def paired_speedup(
    strata: list[np.ndarray], n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED
) -> tuple[float | None, float | None, float | None]:
    """Pooled speedup and its 95% paired-bootstrap CI from per-question rows, resampled per stratum.

    Each stratum is an array ``[n_questions, 4]`` of (method tokens, method time, AR tokens, AR time).
    Without a stratum of at least 2 questions the CI is None (resampling single questions per stratum
    would give a zero-width interval that only looks certain).
    """
    strata = [s for s in strata if len(s)]
    if not strata:
        return None, None, None
    total = sum(s.sum(axis=0) for s in strata)
    if not np.all(total[1:] > 0):  # zero AR tokens or zero timings (e.g. a clock that did not tick): undefined
        return None, None, None
    point = float(_ratio(total))
    if max(len(s) for s in strata) < 2 or n_boot <= 0:
        return point, None, None
    rng = np.random.default_rng(seed)
    boot = np.zeros((n_boot, 4))
    for s in strata:
        idx = rng.integers(0, len(s), size=(n_boot, len(s)))  # [B, n]
        boot += s[idx].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample may draw only zero-time rows
        ratios = _ratio(boot)
    ratios = ratios[np.isfinite(ratios)]
    if not len(ratios):
        return point, None, None
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return point, float(lo), float(hi)


def _lossless_counts(recs: list[Record]) -> dict[str, int]:
    out = dict.fromkeys(LOSSLESS_CLASSES, 0)
    for r in recs:
        if r.lossless_class in out:
            out[r.lossless_class] += 1
    return out


def _cell(method: str, subtask: str, recs: list[Record], strata: list[np.ndarray], n_boot: int, seed: int,
          ar_recs: list[Record]) -> Cell:
    s = _sums(recs)
    if method == BASELINE:
        sp = lo = hi = None
    else:
        sp, lo, hi = paired_speedup(strata, n_boot, seed)
    time = s["time"] or float("nan")
    return Cell(
        method=method, subtask=subtask, n_questions=len(_questions(recs)), speedup=sp, ci_low=lo, ci_high=hi,
        tau=s["tokens"] / s["passes"] if s["passes"] else float("nan"),
        acceptance_rate=s["accepted"] / s["drafted"] if s["drafted"] else None,
        mean_draft_size=s["drafted"] / s["decode_passes"] if s["decode_passes"] else 0.0,
        draft_share=s["draft_time"] / time,
        verify_share=s["verify_time"] / time,
        tokens_per_s=s["tokens"] / time,
        new_tokens=int(s["tokens"]), wall_time_s=s["time"], draft_time_s=s["draft_time"],
        lossless=_lossless_counts(recs),
        latency=latency_stats(recs),
        acceptance=record_profile(recs),
        requests=request_acceptance(recs), percentiles=latency_percentiles(recs),
        sampled=any(r.target_logprob is not None for r in recs),
        tau_ceiling=None if method == BASELINE else tau_ceiling(recs, ar_recs),
        speedup_floor=None if method == BASELINE else speedup_floor(recs, ar_recs),
        **_peak_memory(recs),
    )


def _peak_memory(recs: list[Record]) -> dict[str, Any]:
    peaks = [(r.peak_memory_bytes, r.peak_memory_kind) for r in recs if r.peak_memory_bytes is not None]
    if not peaks:
        return {}
    peak, kind = max(peaks)
    return {"peak_memory_bytes": peak, "peak_memory_kind": kind}


def run_stats(run: Run, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED) -> dict[str, dict[str, Cell]]:
    """``{method: {subtask | "Overall": Cell}}`` for every method of ``run`` (baseline included), judged by the
    plausibility rule."""
    by: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for r in run.records:
        by[(r.method, r.subtask)].append(r)
    subtasks = run.subtasks()
    out: dict[str, dict[str, Cell]] = {}
    for method in run.methods():
        cells: dict[str, Cell] = {}
        strata: list[np.ndarray] = []
        all_recs: list[Record] = []
        for sub in subtasks:
            recs = by.get((method, sub), [])
            if not recs:
                continue
            _, rows = _paired_arrays(recs, by.get((BASELINE, sub), []))
            cells[sub] = _cell(method, sub, recs, [rows], n_boot, seed, by.get((BASELINE, sub), []))
            strata.append(rows)
            all_recs += recs
        if all_recs:
            cells[OVERALL] = _cell(method, OVERALL, all_recs, strata, n_boot, seed,
                                   [r for r in run.records if r.method == BASELINE])
        out[method] = cells
    judge(out)
    flag_cells(run, out)
    return out


def category_stats(run: Run, task: str = "mt_bench", n_boot: int = DEFAULT_BOOTSTRAP,
                   seed: int = DEFAULT_SEED) -> dict[str, dict[str, Cell]]:
    """``{method: {category: Cell}}`` over ``task``'s records, paired with AR per category (MT-Bench's
    writing, roleplay, ...); empty when the run has no records of ``task`` with a category."""
    by: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for r in run.records:
        if r.task == task and r.category:
            by[(r.method, r.category)].append(r)
    categories = order_categories({c for _, c in by})
    out: dict[str, dict[str, Cell]] = {}
    for method in run.methods():
        cells = {}
        for cat in categories:
            recs = by.get((method, cat))
            if recs:
                _, rows = _paired_arrays(recs, by.get((BASELINE, cat), []))
                cells[cat] = _cell(method, cat, recs, [rows], n_boot, seed, by.get((BASELINE, cat), []))
        if cells:
            out[method] = cells
    judge(out)
    flag_cells(run, out, by_category=True)
    return out
