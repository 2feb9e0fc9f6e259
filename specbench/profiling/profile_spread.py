"""How widely a device profile's repeats varied, per figure (issue 85, defect 2): what its medians are worth.

Each figure of a device profile is the median of repeated timings (``measure.py``'s T(n), ``prefill.py``'s P(L),
a drafter's step, the host benchmark's rounds). A profile records beside them, in ``spread``, each figure's
**relative spread**: the interquartile range of its repeats over their median, ``(q3 - q1) / median``. The middle
half, not the whole range: one repeat preempted by a time slice (tens of milliseconds on a shared VM) would make a
quiet figure's range wide, while its median, and its middle half, stay put. It is recorded with 3 repeats or more
(fewer have no quartiles worth the name), as

    "spread": {"target": {context: {n: s}}, "prefill": {L: s}, "host": s}

and a drafter's entry keeps its own per depth (``steps[depth]["spread"]``). A profile without it (written before
it, or edited) reads as "spread unknown": nothing is judged by it.

Two readers use it:

- the read check's "T(n) falling with n" rule (``profile_sense.curve_problem``): a fall beyond the two figures'
  spreads together (at least ``profile_sense.MIN_FALL``) is refused; the fixed 30% where unknown;
- a projected cell (``projection_table``): ``cell_spread`` is the widest spread of the figures that priced it (the
  target's T(n) at the rows its steps verify, at every context; the prefill; its drafter's steps or the host
  figure). Above ``SPREAD_WIDE`` the cell is marked ``profile spread too wide``. Why 25%: a speedup is a ratio of
  two priced times (AR's T(1) steps, the method's T(1 + draft) steps and drafting), and a median whose middle half
  spans ``s`` of it may be off by about ``s / 2`` either way, so the ratio by about ``s``; 25% is about the worst
  error the projection showed against measured runs on a quiet machine (docs/measurements.md: +26.0% at worst,
  most cells within 10%), so beyond it the profile's own noise, not the machines' difference, decides the cell
  (a 1.25x cell could read 1.0x or 1.5x), and a quiet machine's repeats stay well inside it.

>>> relative_spread([0.010, 0.010, 0.011, 0.012, 0.030])  # (one preempted repeat: the middle half stays put)
0.1818
>>> relative_spread([0.01, 0.02]) is None
True
>>> prof = {"target": {"latency_by_context_s": {"128": {"1": 0.01, "2": 0.011, "4": 0.013}}},
...         "spread": {"target": {"128": {"1": 0.02, "2": 0.4, "4": 0.9}}, "prefill": {"16": 0.05}}}
>>> cell_spread(prof, rows=2), cell_spread(prof, rows=3), cell_spread({}, rows=2)
(0.4, 0.9, None)
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Sequence

SPREAD = "spread"  # the device profile's field
SPREAD_WIDE = 0.25  # a projected cell priced by a figure spread more than this is marked (see the docstring)
WIDE_MARK = "profile spread too wide"
MIN_REPEATS = 3


def relative_spread(times: Sequence[float]) -> float | None:
    """``(q3 - q1) / median`` of ``times`` (rounded to 4 digits), None under ``MIN_REPEATS`` or a zero median."""
    if len(times) < MIN_REPEATS:
        return None
    q1, median, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return round((q3 - q1) / median, 4) if median > 0 else None


def spreads_of(times: dict[Any, Sequence[float]]) -> dict[str, float]:
    """``{str(key): relative spread}`` of each timed figure that has one."""
    return {str(k): s for k, ts in sorted(times.items()) if (s := relative_spread(ts)) is not None}


def _number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and 0 <= float(v) < math.inf


def spread_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a profile's ``spread`` field (absent is fine), or None.

    >>> spread_problem({"spread": {"target": {"128": {"1": "wide"}}}})
    'spread.target must map contexts to {n: relative spread} of finite non-negative numbers'
    """
    spread = data.get(SPREAD)
    if spread is None:
        return None
    if not isinstance(spread, dict):
        return "spread must be an object (target, prefill, host)"
    target, prefill, host = spread.get("target", {}), spread.get("prefill", {}), spread.get("host", 0.0)
    if not (isinstance(target, dict) and all(isinstance(c, dict) and all(map(_number, c.values()))
                                             for c in target.values())):
        return "spread.target must map contexts to {n: relative spread} of finite non-negative numbers"
    if not (isinstance(prefill, dict) and all(map(_number, prefill.values()))):
        return "spread.prefill must map prompt lengths to finite non-negative numbers"
    if not _number(host):
        return "spread.host must be a finite non-negative number"
    for key, entry in (data.get("drafters") or {}).items():
        steps = entry.get("steps") if isinstance(entry, dict) else None
        if isinstance(steps, dict) and not all(_number(v.get(SPREAD, 0.0)) for v in steps.values()
                                               if isinstance(v, dict)):
            return f"drafters.{key}.steps' spread must be finite non-negative numbers"
    return None


def target_spreads(profile: dict[str, Any], context: str) -> dict[str, float]:
    """``{n: spread}`` of the target's curve after ``context`` tokens (empty: unknown)."""
    by = ((profile.get(SPREAD) or {}).get("target") or {}).get(str(context)) or {}
    return {str(n): float(s) for n, s in by.items()}


def _covering(keys: Iterable[str], most: float) -> list[str]:
    """The measured sizes a figure at up to ``most`` is read from: those at or below it and the next one above."""
    sizes = sorted(int(k) for k in keys)
    above = [n for n in sizes if n >= most][:1]
    return [str(n) for n in sizes if n < most] + [str(n) for n in above] if sizes else []


def cell_spread(profile: dict[str, Any], rows: float, prompt: float = 0.0, drafting: Iterable[float] = ()) -> \
        float | None:
    """The widest known spread of the figures that price a cell whose steps verify up to ``rows`` rows, whose
    prompts reach ``prompt`` tokens and whose drafting reads figures of spreads ``drafting``; None: none known."""
    spread = profile.get(SPREAD) or {}
    known: list[float] = list(drafting)
    for context, curve in (profile.get("target") or {}).get("latency_by_context_s", {}).items():
        by = target_spreads(profile, context)
        known += [by[n] for n in _covering(curve, rows) if n in by]
    prefill = spread.get("prefill") or {}
    known += [float(prefill[n]) for n in _covering(prefill, prompt) if n in prefill]
    return max(known, default=None)


def drafting_spreads(profile: dict[str, Any], kind: str, steps: dict[str, Any] | None) -> list[float]:
    """The spreads of the figures a method's drafting is priced by: its drafter's steps (``model``), the host
    figure (``host``), none otherwise (``target``: the target's T(1), counted with the curve)."""
    if kind == "host":
        host = (profile.get(SPREAD) or {}).get("host")
        return [float(host)] if host is not None else []
    if kind == "model" and steps:
        return [float(v[SPREAD]) for v in steps.values() if isinstance(v, dict) and SPREAD in v]
    return []
