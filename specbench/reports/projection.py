"""A run's speedups projected onto another machine: its per-step records priced with that machine's costs.

The formula is ``reports/prediction.py``'s, with the other machine's costs (``projection_costs.py``):

    projected seconds = P_onto(prompt) + sum over decode steps of (T_onto(1 + draft nodes + aux rows, context)
                                                                   + drafting seconds on that machine)
    projected speedup = (method tokens / projected method s) / (AR tokens / projected AR s)

pooled over the units both have, per subtask and Overall, beside the measured pooled speedup. Greedy drafts and
accepted lengths do not depend on the machine, so a fixed budget's steps are what that machine would run: its
projection is exact in accepted tokens and leaves only the step prices to the profile.

Example: AR emits 4 tokens in 3 decode steps of T(1) = 10 ms; a method emits them in 1 step of 3 draft nodes
(T(4) = 20 ms) plus 1 ms drafting; prefill 50 ms for both: AR 80 ms, the method 71 ms, projected 1.13x.

>>> from specbench.results.record import Record
>>> def rec(m, acc, sizes, draft):
...     return Record(m, "gsm8k", "GSM8K", "1", "1", "", 1, 0, 16, sum(acc), 1.0, len(acc), sum(draft), 0.0,
...                   accept_lengths=acc, draft_sizes=sizes, draft_times_s=draft)
>>> onto = MachineCosts(lambda n, c=None: 0.01 + (np.asarray(n) - 1) / 300, lambda n: 0.05, {}, 1.0)
>>> ar, m = rec("ar", [1, 1, 1, 1], [0] * 4, [0.0] * 4), rec("pld", [1, 3], [0, 3], [0.0, 0.001])
>>> round(projected_seconds(ar, onto, Drafting(NONE)), 3), round(projected_seconds(m, onto, Drafting(HOST)), 3)
(0.08, 0.071)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from specbench.reports.projection_costs import HOST, MODEL, NONE, Drafting, MachineCosts, drafting_seconds
from specbench.results.record import Record, Unit

Price = Callable[[Record], float]  # a generation's seconds on the other machine


@dataclass(frozen=True)
class Steps:
    """A record's decode steps (the prefill pass excluded) as arrays: rows verified, context, depth, drafting."""

    rows: np.ndarray  # [steps] 1 + draft nodes + aux rows
    sizes: np.ndarray  # [steps] draft nodes
    context: np.ndarray  # [steps] cached tokens before the step
    depths: np.ndarray  # [steps] draft depth (the size for records without depths: chains)
    drafting_s: np.ndarray  # [steps] recorded drafting seconds
    emitted: np.ndarray  # [steps] tokens emitted (accepted + 1)
    before: np.ndarray  # [steps] tokens emitted before the step (the prefill's included)


def decode_steps(rec: Record) -> Steps:
    """The decode steps of a record with per-step fields (``projection_checks.per_step_problem`` is None)."""
    acc = np.asarray(rec.accept_lengths, dtype=int)
    sizes = np.asarray(rec.draft_sizes, dtype=int)
    aux = np.asarray(rec.aux_sizes if rec.aux_sizes else [0] * len(acc), dtype=int)
    depths = np.asarray(rec.draft_depths if rec.draft_depths else rec.draft_sizes, dtype=int)
    context = rec.prompt_tokens + np.cumsum(acc)[:-1]
    return Steps(1 + sizes[1:] + aux[1:], sizes[1:], context, depths[1:], np.asarray(rec.draft_times_s[1:], dtype=float),
                 acc[1:], np.cumsum(acc)[:-1])


def priced_depths(s: Steps, d: Drafting) -> np.ndarray:
    """The depth each step's drafting is priced at in a drafter model's profile entry: a chain's drafted depth
    (a chain drafter runs one step per token it drafts, and stops early on low confidence); a tree's depth asked of
    the drafter, ``min(max_new_tokens - emitted - 1, K)`` (a tree drafter's work follows the depth it is asked
    for, not the depth its best path reached: EAGLE's dynamic tree expands every asked level).

    >>> s = Steps(*(np.array(v) for v in ([9, 9], [8, 8], [5, 9], [2, 2], [0.1, 0.1], [3, 2], [1, 4])))
    >>> priced_depths(s, Drafting(MODEL, max_new_tokens=12)).tolist(), priced_depths(s, Drafting(MODEL)).tolist()
    ([10, 7], [2, 2])
    """
    if d.kind != MODEL or d.max_new_tokens is None or np.array_equal(s.depths, s.sizes):
        return s.depths
    asked = d.max_new_tokens - s.before - 1
    if d.depth_limit is not None:
        asked = np.minimum(asked, d.depth_limit)
    return np.maximum(asked, s.depths)


def projected_seconds(rec: Record, onto: MachineCosts, drafting: Drafting) -> float:
    """The generation's seconds on the other machine (the module docstring's formula)."""
    s = decode_steps(rec)
    prefill = float(onto.prefill(rec.prompt_tokens))
    if not len(s.rows):
        return prefill
    return prefill + float(np.sum(onto.target(s.rows, s.context)
                                  + drafting_seconds(drafting, s.drafting_s, priced_depths(s, drafting), s.context)))


def pooled(method_recs: Iterable[Record], ar_recs: Iterable[Record], price_method: Price,
           price_ar: Price) -> tuple[float, float] | None:
    """(projected, measured) pooled speedup over the units both sides have; None without any."""
    ar: dict[Unit, Record] = {r.unit: r for r in ar_recs}
    mt = ms = mw = at = as_ = aw = 0.0
    for r in method_recs:
        a = ar.get(r.unit)
        if a is None:
            continue
        mt, ms, mw = mt + r.new_tokens, ms + price_method(r), mw + r.wall_time_s
        at, as_, aw = at + a.new_tokens, as_ + price_ar(a), aw + a.wall_time_s
    if not (mt and at and ms > 0 and mw > 0 and as_ > 0 and aw > 0):
        return None
    return (mt / ms) / (at / as_), (mt / mw) / (at / aw)


def ar_price(onto: MachineCosts) -> Price:
    return lambda r: projected_seconds(r, onto, Drafting(NONE))


def method_price(onto: MachineCosts, drafting: Drafting) -> Price:
    return lambda r: projected_seconds(r, onto, drafting)


__all__ = ["HOST", "NONE", "Drafting", "MachineCosts", "Steps", "decode_steps", "priced_depths", "projected_seconds",
           "pooled", "ar_price", "method_price"]
