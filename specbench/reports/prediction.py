"""The cost profile's model of a run, checked against the run: predicted vs measured speedup per method.

The model prices every generation from what the drafter did and what the machine's profile says a
target forward costs:

    predicted seconds = prefill + sum over decode steps of (T(1 + draft nodes + aux rows, context) + draft seconds)

with T from the profile (``specbench/profiling/cost_profile.py``) after the step's context (prompt plus tokens
emitted so far), the step's draft size and drafting time as recorded,
and the prefill as recorded (the same forward for AR and every method). AR is priced the same way (its
steps cost T(1)), so

    predicted speedup = (method tokens / predicted method seconds) / (AR tokens / predicted AR seconds)

pooled over the units both have, next to the measured pooled speedup. A model that is right within a
few percent means the speedup is explained by tau, draft sizes and this machine's T(n): the numbers
``budget=auto`` optimises.

Example: AR record of 4 tokens (prefill 0.1 s, 3 steps of T(1) = 0.04 s) vs a method that emitted the
same 4 tokens in 2 steps of 3 draft nodes (T(4) = 0.05 s, 1 ms drafting): predicted 0.22 s vs 0.202 s,
speedup 1.089.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from specbench.results.record import Record, Unit

Cost = Callable[..., Any]  # (n, context=None) -> seconds (``cost_profile.cost_function``)


def predicted_seconds(rec: Record, cost: Cost) -> float:
    """The profile's price of one generation (see the module docstring); each step's forward is priced
    after its own context (the prompt plus the tokens emitted before it)."""
    passes = len(rec.accept_lengths)
    sizes = np.array(rec.draft_sizes if len(rec.draft_sizes) == passes else [0] * passes)
    aux = np.array(rec.aux_sizes if rec.aux_sizes and len(rec.aux_sizes) == passes else [0] * passes)
    drafting = np.array(rec.draft_times_s if len(rec.draft_times_s) == passes else [0.0] * passes, dtype=float)
    prefill = rec.prefill_time_s if rec.prefill_time_s is not None else float(cost(rec.prompt_tokens))
    if passes < 2:
        return prefill
    context = rec.prompt_tokens + np.cumsum(rec.accept_lengths)[:-1]  # [passes - 1] cache length at each step
    return prefill + float(np.sum(cost(1 + sizes[1:] + aux[1:], context) + drafting[1:]))


def prediction(method_recs: Iterable[Record], ar_recs: Iterable[Record], cost: Cost) -> tuple[float, float] | None:
    """(predicted, measured) pooled speedup over the units both sides have; None without any."""
    ar: dict[Unit, Record] = {r.unit: r for r in ar_recs}
    sums = [0.0] * 6  # method tokens, predicted s, measured s; AR tokens, predicted s, measured s
    for r in method_recs:
        a = ar.get(r.unit)
        if a is None:
            continue
        for i, rec in enumerate((r, a)):
            sums[3 * i] += rec.new_tokens
            sums[3 * i + 1] += predicted_seconds(rec, cost)
            sums[3 * i + 2] += rec.wall_time_s
    if not sums[0] or not sums[3] or not all(sums[i] > 0 for i in (1, 2, 4, 5)):
        return None
    predicted = (sums[0] / sums[1]) / (sums[3] / sums[4])
    measured = (sums[0] / sums[2]) / (sums[3] / sums[5])
    return predicted, measured


def prediction_rows(records: list[Record], methods: list[str], baseline: str, cost: Cost) -> list[dict[str, Any]]:
    """Per drafting method: predicted and measured speedup and the relative error (predicted / measured - 1)."""
    by: dict[str, list[Record]] = {}
    for r in records:
        by.setdefault(r.method, []).append(r)
    out = []
    for m in methods:
        if m == baseline:
            continue
        pm = prediction(by.get(m, []), by.get(baseline, []), cost)
        if pm is not None:
            out.append({"method": m, "predicted": pm[0], "measured": pm[1], "error": pm[0] / pm[1] - 1})
    return out
