"""Acceptance per request (one record = one generation) under vLLM's definition and ours, and per draft position.

The same forward passes, counted three ways:

- **tau** (ours): tokens emitted / forward passes, the prefill's and the undrafted passes included. Pooled over a
  cell's records it is ``Cell.tau``; per request it is one record's ``new_tokens / forward_passes``.
- **mean acceptance length** (vLLM's ``spec_decode`` metrics; llama.cpp's server ``/metrics`` counts the same):
  1 + accepted draft tokens / drafting steps, over the decode steps that verified a draft only
  (``draft_sizes[i] > 0``): a step that drafted nothing counts for nothing, which is why it reads above tau
  whenever some steps do not draft. Pooled over every request (``pooled_mean_acceptance_length``) it is what a
  server's cumulative counters give; per request, one value per record that drafted at least once.
- **per-position acceptance rate** (vLLM's ``num_accepted_tokens_per_pos / num_drafts``): the share of drafting
  steps whose draft position i was accepted. Unconditional, so the rates fall with i and add up to the pooled
  mean acceptance length - 1 (``specbench.results.acceptance.per_position`` is conditional on i - 1 accepted).

A per-request figure's mean weighs a short answer like a long one; the pooled figure weighs every step alike, so
long answers dominate it (vLLM issue #42690). Spreads are numpy's linear-interpolation percentiles.
Records without draft sizes (imported runs) count every decode step as drafted, as ``acceptance.py`` does.

Request A: passes ``[1, 4, 4]`` drafting ``[0, 3, 3]``: mean acceptance length 1 + 6/2 = 4, tau 9/3 = 3.
Request B: ``[1, 1, 1, 2, 1]`` drafting ``[0, 3, 0, 3, 3]``: 1 + 1/3, tau 6/5. Pooled: 1 + 7/5 = 2.4, while the
per-request mean is (4 + 4/3) / 2 = 2.67; position 1 was accepted by 3 of the 5 drafting steps.

>>> from types import SimpleNamespace as R
>>> a = R(accept_lengths=[1, 4, 4], draft_sizes=[0, 3, 3], draft_depths=None, new_tokens=9, forward_passes=3)
>>> b = R(accept_lengths=[1, 1, 1, 2, 1], draft_sizes=[0, 3, 0, 3, 3], draft_depths=None, new_tokens=6,
...       forward_passes=5)
>>> s = request_acceptance([a, b])
>>> s.pooled_mean_acceptance_length, round(s.mean_acceptance_length.mean, 3), s.tau.median
(2.4, 2.667, 2.1)
>>> s.position_rates
[0.6, 0.4, 0.4]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

SPREAD_PERCENTILES = (10, 25, 75, 90)


@dataclass(frozen=True)
class Spread:
    """Mean, median and percentiles of one value per request (``n`` requests; all None when there are none).

    >>> spread([1.0, 2.0, 3.0, 10.0]).to_json()["p25"], spread([]).mean
    (1.75, None)
    """

    n: int = 0
    mean: float | None = None
    median: float | None = None
    percentiles: dict[str, float | None] = field(default_factory=dict)  # {"p10": .., "p25": .., "p75": .., "p90": ..}

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "median": self.median,
                **{f"p{p}": self.percentiles.get(f"p{p}") for p in SPREAD_PERCENTILES}}


def spread(values: Sequence[float]) -> Spread:
    """The ``Spread`` of ``values``."""
    if not len(values):
        return Spread()
    arr = np.asarray(values, dtype=np.float64)
    pct = np.percentile(arr, SPREAD_PERCENTILES)
    return Spread(len(arr), float(arr.mean()), float(np.median(arr)),
                  {f"p{p}": float(v) for p, v in zip(SPREAD_PERCENTILES, pct)})


def drafting_steps(accept_lengths: Sequence[int], draft_sizes: Sequence[int],
                   draft_depths: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """(accepted draft tokens, draft depth) of each decode step that verified a draft (the prefill is pass 0).

    The depth is the draft's longest path (its size where depths were not recorded; a chain's depth is its size).

    >>> drafting_steps([1, 3, 1, 1], [0, 4, 0, 2])
    [(2, 4), (0, 2)]
    """
    if len(draft_sizes) < len(accept_lengths):  # draft sizes not recorded (imported runs): every step drafted
        return [(a - 1, a) for a in accept_lengths[1:]]
    depths = draft_depths if draft_depths is not None and len(draft_depths) >= len(accept_lengths) else draft_sizes
    return [(accept_lengths[i] - 1, depths[i]) for i in range(1, len(accept_lengths)) if draft_sizes[i]]


def mean_acceptance_length(steps: Sequence[tuple[int, int]]) -> float | None:
    """vLLM's mean acceptance length of ``drafting_steps``: 1 + accepted / steps (None without a drafting step)."""
    return 1 + sum(a for a, _ in steps) / len(steps) if steps else None


@dataclass(frozen=True)
class RequestAcceptance:
    """Per-request acceptance of a set of records, and the pooled figures under the same definitions."""

    requests: int = 0
    drafting_requests: int = 0  # requests with at least one drafting step (the others have no vLLM figure)
    drafts: int = 0  # drafting steps, all requests
    accepted: int = 0  # draft tokens accepted in them
    pooled_mean_acceptance_length: float | None = None  # 1 + accepted / drafts: a server's cumulative counters
    mean_acceptance_length: Spread = field(default_factory=Spread)  # vLLM's definition, one value per request
    tau: Spread = field(default_factory=Spread)  # ours (tokens / forward passes), one value per request
    position_rates: list[float] = field(default_factory=list)  # [i - 1]: share of drafts accepting position i

    def to_json(self) -> dict[str, Any]:
        return {"requests": self.requests, "drafting_requests": self.drafting_requests, "drafts": self.drafts,
                "accepted": self.accepted, "pooled_mean_acceptance_length": self.pooled_mean_acceptance_length,
                "mean_acceptance_length": self.mean_acceptance_length.to_json(), "tau": self.tau.to_json(),
                "position_rates": list(self.position_rates)}


def request_acceptance(records: Iterable[Any]) -> RequestAcceptance:
    """``RequestAcceptance`` of records (``accept_lengths``, ``draft_sizes``, ``draft_depths``, ``new_tokens``,
    ``forward_passes``)."""
    per_mal: list[float] = []
    per_tau: list[float] = []
    steps: list[tuple[int, int]] = []
    n = 0
    for r in records:
        n += 1
        if r.forward_passes:
            per_tau.append(r.new_tokens / r.forward_passes)
        mine = drafting_steps(r.accept_lengths, r.draft_sizes, r.draft_depths)
        if mine:
            per_mal.append(mean_acceptance_length(mine))
            steps += mine
    accepted = sum(a for a, _ in steps)
    return RequestAcceptance(requests=n, drafting_requests=len(per_mal), drafts=len(steps), accepted=accepted,
                             pooled_mean_acceptance_length=mean_acceptance_length(steps),
                             mean_acceptance_length=spread(per_mal), tau=spread(per_tau),
                             position_rates=position_rates(steps))


def position_rates(steps: Sequence[tuple[int, int]]) -> list[float]:
    """Share of ``drafting_steps`` that accepted draft position 1, 2, ... up to the deepest draft.

    >>> position_rates([(2, 4), (0, 2), (1, 3)])
    [0.6666666666666666, 0.3333333333333333, 0.0, 0.0]
    """
    if not steps:
        return []
    depth = max(max(a, d) for a, d in steps)  # (an accepted run never exceeds its draft's depth)
    counts = np.bincount(np.asarray([max(a, 0) for a, _ in steps], dtype=np.int64), minlength=depth + 1)  # [k]: k kept
    at_least = np.cumsum(counts[::-1])[::-1]  # [i]: steps accepting i or more
    return [float(x) / len(steps) for x in at_least[1:depth + 1]]
