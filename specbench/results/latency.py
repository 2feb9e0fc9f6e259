"""Prefill vs decode: time to first token, decode-only throughput and per-token latency percentiles.

From schema-4 records (older ones have no step times and give ``None``):
- **TTFT** = ``prefill_time_s``: from the start of the generation to the first token (prefill forward
  plus the generation's setup); reported as the mean and median over records.
- **decode tokens/s** = sum(new_tokens - 1) / sum(wall_time_s - prefill_time_s), pooled over records:
  throughput after the first token, so long prompts no longer pollute it.
- **per-token latency**: each token a decode pass emits is charged that pass's whole step time divided
  by the tokens it emitted (``step_times_s[i] / accept_lengths[i]``); p50 / p90 / p99 over all decode
  tokens (so a pass emitting 4 tokens weighs 4 times).

>>> from types import SimpleNamespace as R
>>> r = R(new_tokens=5, wall_time_s=0.5, prefill_time_s=0.1, accept_lengths=[1, 2, 2], step_times_s=[0.1, 0.2, 0.2])
>>> s = latency_stats([r])
>>> s.decode_tokens_per_s, s.token_latency_s["p50"]
(10.0, 0.1)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

PERCENTILES = (50, 90, 99)


@dataclass
class LatencyStats:
    """Prefill / decode timing of a set of records (None where no record carried the times)."""

    ttft_mean_s: float | None = None
    ttft_p50_s: float | None = None
    decode_tokens_per_s: float | None = None
    token_latency_s: dict[str, float] = field(default_factory=dict)  # {"p50": s, "p90": s, "p99": s}

    def to_json(self) -> dict[str, Any]:
        return {"ttft_mean_s": self.ttft_mean_s, "ttft_p50_s": self.ttft_p50_s,
                "decode_tokens_per_s": self.decode_tokens_per_s,
                "token_latency_s": {f"p{p}": self.token_latency_s.get(f"p{p}") for p in PERCENTILES}}


def latency_stats(records: Iterable[Any]) -> LatencyStats:
    """``LatencyStats`` of records that have ``prefill_time_s`` and ``step_times_s`` (others are skipped)."""
    ttft: list[float] = []
    decode_tokens, decode_time = 0, 0.0
    per_token: list[np.ndarray] = []
    for r in records:
        if r.prefill_time_s is None or r.step_times_s is None:
            continue
        ttft.append(r.prefill_time_s)
        decode_tokens += r.new_tokens - 1
        decode_time += r.wall_time_s - r.prefill_time_s
        emitted = np.asarray(r.accept_lengths[1:], dtype=np.int64)
        if len(emitted):
            per_token.append(np.repeat(np.asarray(r.step_times_s[1:], dtype=np.float64) / emitted, emitted))
    out = LatencyStats()
    if ttft:
        out.ttft_mean_s = float(np.mean(ttft))
        out.ttft_p50_s = float(np.median(ttft))
    if decode_time > 0:
        out.decode_tokens_per_s = decode_tokens / decode_time
    if per_token:
        lat = np.concatenate(per_token)
        if len(lat):
            out.token_latency_s = {f"p{p}": float(v) for p, v in zip(PERCENTILES, np.percentile(lat, PERCENTILES))}
    return out
