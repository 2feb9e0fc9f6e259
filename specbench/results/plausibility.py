"""The plausibility rule: a speedup above what tau allows is not a result, it is a broken measurement.

Why there is a ceiling: speedup = (method tokens / method time) / (AR tokens / AR time). Every forward pass of a
method is a target pass over its root plus its draft (one row or many), and a target pass over more rows costs
at least what AR's one-row step costs (on a CPU it grows with the rows, on a GPU it is flat at best); the prefill
is the same forward for both. So a method's time on a question is at least its passes times AR's time per token
on that question, and its speedup is at most

    ceiling = (AR seconds per token, pooled) x (method tokens) / sum over questions (passes_i x AR seconds per token_i)

which is tau (tokens per pass) when AR's per-token time is the same on every question (``tau_ceiling``: the
weighting keeps the bound honest where questions' step costs differ). The rule holds for every method whose
``forward_passes`` are target passes, which is every row specbench records: self-drafting methods (SWIFT's
layer-skipped drafts) run their drafts outside the counted passes, so they count only as time; an engine's rows
count the passes its stream shows (llama.cpp's draft counters, or one pass per streamed event). Imported
Spec-Bench records count Spec-Bench's ``decoding_steps``; a cell whose records give no pass count is not checked.
At a batch size (or concurrency) above 1 a batch's time follows its slowest sequence's passes, not the pooled
ones, so the ceiling there is the largest tau of one sequence.

A cell is **implausible** when its speedup exceeds ``ceiling x (1 + margin)``. The margin is ``MARGIN`` (25%)
plus the run's noise floor when it has one (an ``ar@twin`` row: how far its cells stray from 1.00x, at most
``FLOOR_CAP``), because speedup and ceiling come from the same records: what separates them is not sampling over
questions (a confidence interval) but the machine's drift between the two timings of one question, which the
noise floor measures (up to 6-7% per cell and 9-13% per question on this project's 2-core CPU,
docs/measurements.md). A twin row's own ceiling is exactly 1, judged with ``MARGIN`` alone. What it means: the
baseline was slowed (a stall in AR's generation, cuDNN's first calls billed to AR) or the method's time is wrong.

The excess must also amount to ``MIN_EXCESS_S`` of the baseline's time (``excess_s``: about the method's time x
(speedup - allowed), the AR seconds the cell's passes cannot explain): an operating system's scheduling noise is
absolute, not relative (a time slice lost to another process costs tens of milliseconds whatever the generation's
length), so a test run of a tiny model whose AR generation takes 50 ms may drift past 25% on a loaded machine and
is no finding; every slowdown reported so far was seconds (a 20 s stop, 96.6 s against 2.3 s).

The floor (issue 85, defect 14): a method's time is also bounded from above by its work. A pass verifying ``r``
rows (its root, its draft, any auxiliary rows such as lookahead's Jacobi window) costs at most ``r`` of AR's
one-row steps (a forward over ``r`` rows is never slower than ``r`` forwards over one), and its drafting costs what
it timed (``draft_time_s``). So its speedup is at least

    floor = (AR seconds per token, pooled) x (method tokens) / sum over questions (rows_i x AR s/token_i + draft_i)

which is about 1 for identical work (tau 1.00, nothing drafted, negligible drafting). A cell reading below
``floor / (1 + LOW_MARGIN + noise floor)`` with at least ``MIN_EXCESS_S`` of its own time unexplained is
implausible too: its time was not spent on its work (a stall the stall tests missed, a machine under load).
``LOW_MARGIN`` is generous (twice the time the work explains) because a method's own bookkeeping per pass (accept,
trim) is timed in neither. No floor where the rows are unknown (records without per-pass draft sizes: imported
Spec-Bench records), where drafting is another process's (an engine's rows) or at a batch size above 1 (a batch's
time follows its slowest sequence, not the pooled rows).

>>> from types import SimpleNamespace as C
>>> stats = {"ar": {"GSM8K": C(speedup=None, tau=1.0, tau_ceiling=1.0, wall_time_s=21.0)},
...          "pld": {"GSM8K": C(speedup=8.1, tau=1.0, tau_ceiling=1.0, wall_time_s=2.9),
...                  "Overall": C(speedup=1.4, tau=1.9, tau_ceiling=1.9, wall_time_s=9.0)}}
>>> verdicts = judge(stats)
>>> print(stats["pld"]["GSM8K"].implausible)
pld on GSM8K: 8.10x at tau 1.00 exceeds the most tau allows (1.00x + 25% margin = 1.25x; about 19.9 s of the baseline's time unexplained): the baseline was slowed or the method's time is wrong
>>> print(counts_line(verdicts)), stats["pld"]["Overall"].implausible is None
plausibility: 2 cells checked, 1 implausible
(None, True)
>>> slow = {"pld": {"GSM8K": C(speedup=0.23, tau=1.0, tau_ceiling=1.0, speedup_floor=0.99, wall_time_s=9.0)}}
>>> print(judge(slow)[0].reason())
pld on GSM8K: 0.23x at tau 1.00 is below what its work allows (0.99x / (1 + 100% margin) = 0.49x; about 4.8 s of its time unexplained): its time was not spent on its work (a stall, a loaded machine)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from specbench.catalog import ENGINE_PREFIX
from specbench.results.twin_rows import is_twin, twin_labels

MARGIN = 0.25  # relative: a quiet machine's drift between two timings of one question stays well below it
FLOOR_CAP = 0.25  # the most a twin row's reading may widen the margin (a stalled twin must not switch the rule off)
MIN_EXCESS_S = 0.5  # seconds of the baseline's time the excess must amount to (scheduling noise is absolute)
LOW_MARGIN = 1.0  # relative, below the floor: twice the time the cell's work explains (its bookkeeping is untimed)


def _pairs(method_recs: Iterable[Any], ar_recs: Iterable[Any]) -> list[tuple[Any, Any]]:
    """(method record, AR record) of each unit both have."""
    ar = {r.unit: r for r in ar_recs}
    return [(r, ar[r.unit]) for r in method_recs if r.unit in ar]


def tau_ceiling(method_recs: Iterable[Any], ar_recs: Iterable[Any]) -> float | None:
    """The most speedup the method's passes allow against AR on the units both have (see the module docstring);
    None without such units, without a pass count or without AR time."""
    pairs = _pairs(method_recs, ar_recs)
    if not pairs or any(r.forward_passes <= 0 or a.wall_time_s <= 0 or a.new_tokens <= 0 for r, a in pairs):
        return None
    if any(r.unit.batch > 1 for r, _ in pairs):  # (a batch's time follows its slowest sequence's passes)
        return max(r.new_tokens / r.forward_passes for r, _ in pairs)
    per_token = sum(a.wall_time_s for _, a in pairs) / sum(a.new_tokens for _, a in pairs)
    priced = sum(r.forward_passes * a.wall_time_s / a.new_tokens for r, a in pairs)
    return per_token * sum(r.new_tokens for r, _ in pairs) / priced


def _rows(rec: Any) -> int | None:
    """Rows ``rec``'s passes verified (a root per pass, its draft, auxiliary rows); None without per-pass sizes."""
    if len(rec.draft_sizes or []) != rec.forward_passes:
        return None
    return rec.forward_passes + rec.drafted + sum(rec.aux_sizes or [])


def speedup_floor(method_recs: Iterable[Any], ar_recs: Iterable[Any]) -> float | None:
    """The least speedup the method's work explains against AR on the units both have (see the module docstring);
    None without such units, without per-pass rows, for an engine's rows or at a batch size above 1."""
    pairs = _pairs(method_recs, ar_recs)
    rows = [_rows(r) for r, _ in pairs]
    if (not pairs or None in rows or any(a.wall_time_s <= 0 or a.new_tokens <= 0 for _, a in pairs)
            or any(r.method.startswith(ENGINE_PREFIX) or (r.batch_size or 1) > 1 for r, _ in pairs)):
        return None
    per_token = sum(a.wall_time_s for _, a in pairs) / sum(a.new_tokens for _, a in pairs)
    explained = sum(n * a.wall_time_s / a.new_tokens + r.draft_time_s for n, (r, a) in zip(rows, pairs))
    return per_token * sum(r.new_tokens for r, _ in pairs) / explained if explained > 0 else None


def noise_floor(stats: dict[str, dict[str, Any]]) -> float:
    """How far the run's twin rows stray from 1.00x at most, capped at ``FLOOR_CAP`` (0 without a twin row)."""
    strays = [abs(c.speedup - 1.0) for label in twin_labels(list(stats)) for c in stats[label].values()
              if c.speedup is not None]
    return min(max(strays, default=0.0), FLOOR_CAP)


@dataclass(frozen=True)
class Verdict:
    """One cell's reading against its ceiling."""

    method: str
    subtask: str
    speedup: float
    tau: float
    ceiling: float
    margin: float
    wall_time_s: float  # the method's time in the cell
    floor: float = 0.0
    lowest: float | None = None  # the least speedup its work explains (``speedup_floor``); None: not bounded below
    min_excess_s: float = MIN_EXCESS_S  # 0 for a projected cell: priced arithmetic has no scheduling noise

    @property
    def allowed(self) -> float:
        return self.ceiling * (1 + self.margin)

    @property
    def excess_s(self) -> float:
        """About how many of the baseline's seconds the cell's passes cannot explain: AR's time is about the
        method's x speedup (same tokens), and at most ``allowed`` times the method's would be explained."""
        return self.wall_time_s * (self.speedup - self.allowed)

    @property
    def least(self) -> float | None:
        """The least speedup allowed: the floor over its margin (``LOW_MARGIN`` + the noise floor)."""
        return None if self.lowest is None else self.lowest / (1 + LOW_MARGIN + self.floor)

    @property
    def unexplained_s(self) -> float:
        """About how many of the method's seconds its work cannot explain: its time x (1 - speedup / least)."""
        return 0.0 if self.least is None else self.wall_time_s * (1 - self.speedup / self.least)

    @property
    def too_high(self) -> bool:
        return self.speedup > self.allowed and self.excess_s >= self.min_excess_s

    @property
    def too_low(self) -> bool:
        return self.least is not None and self.speedup < self.least and self.unexplained_s >= self.min_excess_s

    @property
    def implausible(self) -> bool:
        return self.too_high or self.too_low

    def reason(self) -> str:
        if self.too_low and self.least is not None and self.lowest is not None:
            floor = f" + {self.floor:.0%} noise floor" if self.floor else ""
            return (f"{self.method} on {self.subtask}: {self.speedup:.2f}x at tau {self.tau:.2f} is below what its "
                    f"work allows ({self.lowest:.2f}x / (1 + {LOW_MARGIN:.0%} margin{floor}) = {self.least:.2f}x; "
                    f"about {self.unexplained_s:.1f} s of its time unexplained): its time was not spent on its work "
                    "(a stall, a loaded machine)")
        floor = f" + {self.floor:.0%} noise floor" if self.floor else ""
        return (f"{self.method} on {self.subtask}: {self.speedup:.2f}x at tau {self.tau:.2f} exceeds the most tau "
                f"allows ({self.ceiling:.2f}x + {MARGIN:.0%} margin{floor} = {self.allowed:.2f}x; about "
                f"{self.excess_s:.1f} s of the baseline's time unexplained): the baseline was slowed or the method's "
                "time is wrong")


def judge(stats: dict[str, dict[str, Any]]) -> list[Verdict]:
    """Every cell of ``stats`` with a speedup and a ceiling, judged; sets each cell's ``implausible`` to its reason
    (None when plausible). Returns the verdicts, the cells checked."""
    floor = noise_floor(stats)
    out = []
    for method, cells in stats.items():
        for subtask, c in cells.items():
            c.implausible = None
            if c.speedup is None or c.tau_ceiling is None:
                continue
            own = 0.0 if is_twin(method) else floor
            v = Verdict(method, subtask, c.speedup, c.tau, c.tau_ceiling, MARGIN + own, c.wall_time_s, own,
                        getattr(c, "speedup_floor", None))  # (cells built by hand, projected ones, may have none)
            if v.implausible:
                c.implausible = v.reason()
            out.append(v)
    return out


def counts_line(verdicts: list[Verdict]) -> str:
    """``plausibility: 24 cells checked, 0 implausible``."""
    bad = sum(v.implausible for v in verdicts)
    return f"plausibility: {len(verdicts)} cell{'s' if len(verdicts) != 1 else ''} checked, {bad} implausible"
