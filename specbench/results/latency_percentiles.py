"""P50 / P95 / P99 of TPOT, inter-token latency and end-to-end latency, as serving benchmarks define them.

Per request (one record), from its schema-4 step times (older records have none and count for nothing):

- **E2E latency**: the generation's seconds, first token included: ``wall_time_s`` when it was decoded alone; in
  a batch (``wall_time_s`` is then an equal share of the batch) from its admission to its last token
  (``finished_s - admitted_s``).
- **TPOT** (time per output token, vLLM's benchmark definition): (E2E - TTFT) / (new_tokens - 1), the seconds
  per token after the first; a request of one token has none.
- **ITL** (inter-token latency): the gap between a request's successive emissions, i.e. each decode step's
  seconds (``step_times_s[1:]``). A speculative step emits several tokens at once and its gap counts once, as a
  serving benchmark counts the gap before each streamed chunk; ``latency.py``'s per-token latency instead divides
  the step among its tokens.

TPOT and E2E percentiles are over requests, ITL's over every gap of every request pooled (numpy's linear
interpolation, as vLLM's benchmark uses).

>>> from types import SimpleNamespace as R
>>> a = R(unit=R(batch=1), wall_time_s=0.5, prefill_time_s=0.1, new_tokens=5, step_times_s=[0.1, 0.2, 0.2])
>>> b = R(unit=R(batch=1), wall_time_s=0.3, prefill_time_s=0.1, new_tokens=3, step_times_s=[0.1, 0.1, 0.1])
>>> p = latency_percentiles([a, b])
>>> p.tpot_s["p50"], p.itl_s["p50"], p.e2e_s["p99"]
(0.1, 0.15000000000000002, 0.498)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

PERCENTILES = (50, 95, 99)


def e2e_latency_s(r: Any) -> float | None:
    """Seconds from the request's start (its admission, in a batch) to its last token."""
    if r.unit.batch == 1:
        return r.wall_time_s
    if r.admitted_s is None or r.finished_s is None:
        return None
    return r.finished_s - r.admitted_s


def tpot_s(r: Any) -> float | None:
    """Seconds per output token after the first (None for a single token or without step times)."""
    e2e = e2e_latency_s(r)
    if e2e is None or r.prefill_time_s is None or r.new_tokens < 2:
        return None
    return (e2e - r.prefill_time_s) / (r.new_tokens - 1)


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """``{"p50": .., "p95": .., "p99": ..}`` of ``values`` (None each without values)."""
    if not len(values):
        return {f"p{p}": None for p in PERCENTILES}
    return {f"p{p}": float(v) for p, v in zip(PERCENTILES, np.percentile(np.asarray(values, dtype=np.float64),
                                                                          PERCENTILES))}


@dataclass(frozen=True)
class LatencyPercentiles:
    """Serving-style latency percentiles of a set of records (each ``{"p50", "p95", "p99"}``, None without data)."""

    requests: int = 0  # records with step times
    tpot_s: dict[str, float | None] = field(default_factory=lambda: percentiles([]))
    itl_s: dict[str, float | None] = field(default_factory=lambda: percentiles([]))
    e2e_s: dict[str, float | None] = field(default_factory=lambda: percentiles([]))

    def to_json(self) -> dict[str, Any]:
        return {"requests": self.requests, "tpot_s": dict(self.tpot_s), "itl_s": dict(self.itl_s),
                "e2e_s": dict(self.e2e_s)}


def latency_percentiles(records: Iterable[Any]) -> LatencyPercentiles:
    """``LatencyPercentiles`` of records with step times (the others are skipped)."""
    tpot: list[float] = []
    e2e: list[float] = []
    gaps: list[float] = []
    n = 0
    for r in records:
        if r.prefill_time_s is None or r.step_times_s is None:
            continue
        n += 1
        gaps += r.step_times_s[1:]
        for out, value in ((tpot, tpot_s(r)), (e2e, e2e_latency_s(r))):
            if value is not None:
                out.append(value)
    return LatencyPercentiles(n, percentiles(tpot), percentiles(gaps), percentiles(e2e))
