"""An up-front estimate of a run's duration: its generations priced with the cost profile, plus the
first-use builds still to do (datastores, trained drafters) and the cost profile when one must be measured.

A generation of AR costs its prefill plus one target forward per new token after a growing context,
T(rows, context) from the profile (``specbench/profiling/cost_profile.py``); every answer is taken to run
to ``--max-new-tokens`` (an upper bound: answers that stop early make the run shorter). A drafting method's
generation costs AR's divided by its speedup, which is not known before the run: the estimate assumes AR's
speed and gives the range of ``SPEEDUP_PRIOR``. A batched job of B sequences costs one generation of B rows.

Example: T(n) = 40 ms for any n (prefill included), 128 new tokens: AR 5.12 s a generation; one question of
AR and one drafting method about 10.2 s (8.5 s if the method is 1.5x AR's speed, 14.4 s if 0.55x).

>>> cost = lambda n, context=None: 0.04 * np.ones_like(np.asarray(n, dtype=float))
>>> round(generation_s(cost, prompt_tokens=200, new_tokens=128), 2)
5.12
>>> [round(s, 1) for s in estimate_work([Work(True, 200, 128), Work(False, 200, 128)], cost)]
[8.5, 10.2, 14.4]
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

Cost = Callable[..., Any]  # (n, context=None) -> seconds (``cost_profile.cost_function``)

# (low, assumed, high) speed of a drafting method relative to AR's when nothing is known about it: the
# spread of the default methods' measured Overall speedups on this project's 2-core CPU
# (docs/measurements.md: dresd 0.58x ... pld 1.35x, samd@auto 1.42x); the assumption is AR's own speed
SPEEDUP_PRIOR = (0.55, 1.0, 1.5)
# the same at batch sizes above 1, where drafting is dearer (every sequence's draft pads the shared forward):
# docs/measurements.md's batch-8 rows reach lookahead@auto 0.19x, and recycling ran at 0.22x AR at B=4
# (`python run_bench.py --methods recycling --tasks gsm8k,mt_bench --limit 8 --batch-size 1,4
# --max-new-tokens 64`), outside 0.55
BATCHED_SPEEDUP_PRIOR = (0.2, 1.0, 1.5)
TARGET_PASS_ROWS = 1024  # a build's batched target pass, priced per token as a forward of this many rows


@dataclass(frozen=True)
class Work:
    """One generation of the run, priced alike with every other of the same fields: AR (``baseline``) or a
    drafting method, ``rows`` sequences decoded together (a batched job), ``records`` it writes (0: warm-up)."""

    baseline: bool
    prompt_tokens: int
    new_tokens: int
    rows: int = 1
    records: int = 1


@dataclass(frozen=True)
class PendingBuild:
    """A first-use artifact the run will make before its first generation: ``what`` it is (``build rest's
    datastore``; builds of one ``what`` are summed in the estimate's lines) and ``detail`` (``of sharegpt``),
    about how many ``seconds`` it takes besides a teacher-forced target pass over ``target_tokens`` tokens
    (priced with the cost profile: ``priced``), and a ``key`` naming it (its cache folder), so several tasks
    sharing one artifact count it once."""

    what: str
    seconds: float
    key: str = ""
    target_tokens: int = 0
    detail: str = ""


@dataclass(frozen=True)
class RunEstimate:
    """What the run will take: ``records`` generations timed (+ ``warmups`` untimed), the ``seconds`` of all
    of them (low, about, high; ``warmup_s`` of it the warm-up's, about), the ``builds`` before them, and
    ``limited``: (N, about seconds) of the same run at ``--limit N`` (None when the run has no more than N
    questions per task)."""

    records: int
    warmups: int
    seconds: tuple[float, float, float]
    builds: tuple[PendingBuild, ...] = ()
    limited: tuple[int, float] | None = None
    source: str = ""  # where T(n) came from, for the reader
    warmup_s: float = 0.0

    @property
    def build_s(self) -> float:
        return sum(b.seconds for b in self.builds)

    @property
    def total_s(self) -> float:
        """About how long the whole run takes: builds and generations (warm-up included)."""
        return self.build_s + self.seconds[1]

    @property
    def per_record_s(self) -> float | None:
        """The mean estimated seconds of one timed generation (seeds the progress bar's rate)."""
        return (self.seconds[1] - self.warmup_s) / self.records if self.records else None

    def as_dict(self) -> dict[str, Any]:
        """The manifest's ``estimate``: seconds of the whole run (about, low, high), builds and generations."""
        lo, mid, hi = self.seconds
        return {"seconds": round(self.total_s, 1), "low_s": round(lo + self.build_s, 1),
                "high_s": round(hi + self.build_s, 1), "builds_s": round(self.build_s, 1),
                "generations": self.records, "warmups": self.warmups, "source": self.source}


def generation_s(cost: Cost, prompt_tokens: int, new_tokens: int, rows: int = 1) -> float:
    """Seconds of one generation: the prefill of ``rows`` prompts, then a forward of ``rows`` tokens per
    new token after the prompt and the tokens before it."""
    steps = np.arange(max(new_tokens - 1, 0), dtype=float)
    decode = np.sum(cost(np.full_like(steps, rows), prompt_tokens + steps)) if len(steps) else 0.0
    return float(cost(prompt_tokens * rows)) + float(decode)


def estimate_work(work: Iterable[Work], cost: Cost, prior: Sequence[float] = SPEEDUP_PRIOR,
                  batched_prior: Sequence[float] = BATCHED_SPEEDUP_PRIOR) -> tuple[float, float, float]:
    """(low, about, high) seconds of ``work``: AR priced as is, a drafting method at AR's price over each of
    ``prior``'s speedups (``batched_prior``'s for a job of several rows; the fastest gives the low figure)."""
    out = np.zeros(3)
    for w, n in Counter(work).items():
        ar = n * generation_s(cost, w.prompt_tokens, w.new_tokens, w.rows)
        speedups = np.array(prior if w.rows == 1 else batched_prior)
        out += ar if w.baseline else ar / speedups[::-1]
    return float(out[0]), float(out[1]), float(out[2])


def format_duration(seconds: float) -> str:
    """A duration with no more precision than an estimate has.

    >>> format_duration(42), format_duration(200), format_duration(3 * 3600 + 17 * 60), format_duration(13.6 * 3600)
    ('42 s', '3 min', '3 h 20 min', '14 h')
    """
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    if minutes < 10 * 60:
        h, m = divmod(int(round(minutes / 10) * 10), 60)
        return f"{h} h" + (f" {m} min" if m else "")
    return f"{minutes / 60:.0f} h"


def format_estimate(est: RunEstimate, prefix: str = "[specbench] ") -> list[str]:
    """The lines a run prints before its first generation.

    >>> est = RunEstimate(2028, 6, (6.1 * 3600, 9.6 * 3600, 15 * 3600),
    ...                   (PendingBuild("build rest's datastore", 200, detail="of sharegpt"),), (3, 190),
    ...                   "the cached cost profile")
    >>> print("\\n".join(format_estimate(est, "")))
    estimate: 2028 generations (+6 warm-up), about 9 h 40 min here (6 h 10 min to 15 h; T(n) from the cached cost profile)
      first: ~3 min to build rest's datastore of sharegpt
      --limit 3 would take about 3 min (+ the same first-use builds)
    """
    lo, mid, hi = est.seconds
    warm = f" (+{est.warmups} warm-up)" if est.warmups else ""
    source = f"; T(n) from {est.source}" if est.source else ""
    spread = f"{format_duration(lo)} to {format_duration(hi)}{source}"
    lines = [f"{prefix}estimate: {est.records} generations{warm}, about {format_duration(mid)} here ({spread})"]
    if est.builds:
        lines.append(f"{prefix}  first: " + ", ".join(_builds_text(est.builds)))
    if est.limited:
        n, seconds = est.limited
        lines.append(f"{prefix}  --limit {n} would take about {format_duration(seconds)}"
                     + (" (+ the same first-use builds)" if est.builds else ""))
    return lines


def _builds_text(builds: Sequence[PendingBuild]) -> list[str]:
    """One phrase per kind of build: ``~2 min to build rest's datastore of sharegpt``, or of several summed,
    ``~6 min to build rest's datastore x3``."""
    kinds: dict[str, list[PendingBuild]] = {}
    for b in builds:
        kinds.setdefault(b.what, []).append(b)
    return [f"~{format_duration(sum(b.seconds for b in bs))} to {what}"
            + (f" x{len(bs)}" if len(bs) > 1 else f" {bs[0].detail}" if bs[0].detail else "")
            for what, bs in kinds.items()]


def priced(build: PendingBuild, cost: Cost) -> PendingBuild:
    """``build`` with its target pass in its seconds: each token at the cost per row of a forward of
    ``TARGET_PASS_ROWS`` rows (a build feeds the target long batches).

    >>> priced(PendingBuild("embed", 10, target_tokens=2048), lambda n, context=None: 0.002 * n).seconds
    14.096
    """
    if not build.target_tokens:
        return build
    per_token = float(cost(TARGET_PASS_ROWS)) / TARGET_PASS_ROWS
    return dataclasses.replace(build, seconds=build.seconds + build.target_tokens * per_token, target_tokens=0)


def unique_builds(builds: Iterable[PendingBuild | None]) -> tuple[PendingBuild, ...]:
    """``builds`` without the Nones and with each key once (several tasks may share one artifact).

    >>> [b.what for b in unique_builds([PendingBuild("a", 1, "k"), None, PendingBuild("a", 1, "k")])]
    ['a']
    """
    seen: dict[str, PendingBuild] = {}
    for b in builds:
        if b is not None:
            seen.setdefault(b.key or b.what, b)
    return tuple(seen.values())
