"""The plausibility rule for projected cells (issue 85, defect 2): the measured cells' rule, with the profile's prices.

A measured cell is bounded by its work (``results/plausibility.py``): each of its passes costs at least AR's one-row
step and at most ``rows`` of them, plus its drafting. A projected cell is the same records priced on a profile
(``projection.py``), so the same bounds hold with the profile's prices instead of measured times:

    ceiling = (method tokens / sum (P(prompt) + sum over steps (T(1, context) + priced drafting))) / (AR tokens / AR s)
    floor   = (method tokens / sum (P(prompt) + sum over steps (rows x T(1, context) + priced drafting))) / (...)

with AR's seconds priced as the projection prices them (the same prefill, T(1) per step). A projected figure above
``ceiling x (1 + margin)`` is one that only a profile pricing a forward of more rows below a forward of one (T(n)
falling with n) can give; one below ``floor / (1 + LOW_MARGIN + spread)`` only a profile pricing a forward of
``n`` rows above ``n`` forwards of one row. Both are the profile's, not the run's: the cell is marked
``implausible`` and a note says which bound it broke. The margins are the measured rule's (``MARGIN``,
``LOW_MARGIN``), widened by the spread of the profile's figures that priced the cell where the profile records it
(``profile_spread.cell_spread``, capped at ``FLOOR_CAP``), as a run's noise floor widens its own. No absolute
minimum of seconds (``MIN_EXCESS_S``): priced arithmetic has no scheduling noise. Cells of ``budget=auto`` (the best
fixed budget in hindsight: their steps are cut, not recorded) are not judged.

Example: T(1) = 10 ms, T(4) = 4 ms (a profile whose T(n) falls), a free prefill; AR emits 5 tokens, 4 of them in
4 decode steps (40 ms), a method the same 5, 4 of them in 1 step of 3 draft nodes (4 ms): projected 10x, where a
step priced at no less than T(1) allows 4x (tau 2.5 counts the prefill's pass, priced at nothing here):

>>> from specbench.results.record import Record
>>> from specbench.reports.projection_costs import MachineCosts
>>> def rec(m, acc, sizes):
...     return Record(m, "gsm8k", "GSM8K", "1", "1", "", 1, 0, 16, sum(acc), 1.0, len(acc), 0.0, 0.0,
...                   accept_lengths=acc, draft_sizes=sizes, draft_times_s=[0.0] * len(acc))
>>> onto = MachineCosts(lambda n, c=None: np.where(np.asarray(n) > 1, 0.004, 0.01), lambda n: 0.0, {}, 1.0)
>>> ar, m = rec("ar", [1, 1, 1, 1, 1], [0] * 5), rec("pld", [1, 4], [0, 3])
>>> b = projected_bounds([m], [ar], onto, Drafting(NONE))
>>> round(b.ceiling, 2), round(b.floor, 2), round(b.tau, 2)
(4.0, 1.0, 2.5)
>>> print(projected_verdict(VerdictInput("pld", "GSM8K", "B", 10.0), b))
implausible: pld on GSM8K projected on B: 10.00x at tau 2.50 exceeds the most its passes and priced drafting allow there (4.00x + 25% margin = 5.00x): the profile prices a forward of more rows below a forward of one (T(n) falling with n)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from specbench.reports.projection import decode_steps, priced_depths, projected_seconds
from specbench.reports.projection_costs import NONE, Drafting, MachineCosts, drafting_seconds
from specbench.results.plausibility import FLOOR_CAP, LOW_MARGIN, MARGIN, Verdict
from specbench.results.record import Record, Unit

IMPLAUSIBLE = "implausible"


@dataclass(frozen=True)
class Bounds:
    """A projected cell's ceiling and floor on one profile, its tau and its projected method seconds."""

    ceiling: float
    floor: float
    tau: float
    method_s: float


@dataclass(frozen=True)
class VerdictInput:
    """The projected cell judged: its method, subtask, profile label, projected speedup and the profile's spread."""

    method: str
    subtask: str
    label: str
    speedup: float
    spread: float | None = None  # relative spread of the figures that priced it (None: not recorded)


def _step_bounds(rec: Record, onto: MachineCosts, drafting: Drafting) -> tuple[float, float]:
    """(least, most) seconds of ``rec`` on ``onto``: every pass priced at T(1), or at rows x T(1)."""
    s = decode_steps(rec)
    prefill = float(onto.prefill(rec.prompt_tokens))
    if not len(s.rows):
        return prefill, prefill
    one = np.asarray(onto.target(np.ones(len(s.rows)), s.context), dtype=float)
    draft = drafting_seconds(drafting, s.drafting_s, priced_depths(s, drafting), s.context)
    return prefill + float(np.sum(one + draft)), prefill + float(np.sum(s.rows * one + draft))


def projected_bounds(method_recs: Iterable[Record], ar_recs: Iterable[Record], onto: MachineCosts,
                     drafting: Drafting) -> Bounds | None:
    """The bounds of the cell pooled over the units both sides have (the module docstring); None without any."""
    ar: dict[Unit, Record] = {r.unit: r for r in ar_recs}
    pairs = [(r, ar[r.unit]) for r in method_recs if r.unit in ar]
    if not pairs:
        return None
    least = most = ar_s = 0.0
    for r, a in pairs:
        lo, hi = _step_bounds(r, onto, drafting)
        least, most, ar_s = least + lo, most + hi, ar_s + projected_seconds(a, onto, Drafting(NONE))
    tokens, ar_tokens = sum(r.new_tokens for r, _ in pairs), sum(a.new_tokens for _, a in pairs)
    passes = sum(r.forward_passes for r, _ in pairs)
    if not (least > 0 and ar_s > 0 and tokens and ar_tokens and passes):
        return None
    per_ar = ar_tokens / ar_s
    return Bounds((tokens / least) / per_ar, (tokens / most) / per_ar, tokens / passes, least)


def projected_verdict(cell: VerdictInput, b: Bounds) -> str | None:
    """The note of a projected cell outside its bounds (``implausible: ...``), None when within them."""
    widen = min(cell.spread or 0.0, FLOOR_CAP)
    v = Verdict(cell.method, cell.subtask, cell.speedup, b.tau, b.ceiling, MARGIN + widen, b.method_s, widen,
                b.floor, min_excess_s=0.0)
    where = f"{IMPLAUSIBLE}: {cell.method} on {cell.subtask} projected on {cell.label}: {cell.speedup:.2f}x at tau " \
            f"{b.tau:.2f}"
    spread = f" + {widen:.0%} profile spread" if widen else ""
    if v.too_high:
        return (f"{where} exceeds the most its passes and priced drafting allow there ({b.ceiling:.2f}x + "
                f"{MARGIN:.0%} margin{spread} = {v.allowed:.2f}x): the profile prices a forward of more rows below a "
                "forward of one (T(n) falling with n)")
    if v.too_low and v.least is not None:
        return (f"{where} is below what its work allows there ({b.floor:.2f}x / (1 + {LOW_MARGIN:.0%} "
                f"margin{spread}) = {v.least:.2f}x): the profile prices a forward of n rows above n forwards of one")
    return None
