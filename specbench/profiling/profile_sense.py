"""Does a device profile make physical sense? Checked on read, after its structure (issue 85, defect 2).

A profile measured beside another job, or edited by hand, can hold seconds no machine gives, and a projection
prices them without a word: T(1) = 1e30 s read "1.79x projected", a T(16) or host figure of 1e30 "0.00x", a T(n)
falling with n "1.51x". So a profile is refused (one line naming the field, ``sense_problem``) when:

- a figure is outside ``MIN_S`` .. ``MAX_S`` (1 us: below a GPU kernel's launch; an hour: above any forward, prefill
  or drafting step of a model that fits a machine) or the host figure outside ``HOST_MIN_S`` .. ``HOST_MAX_S``
  (the fixed model-free drafting benchmark takes a few milliseconds, ``host_factor.py``);
- T(n) rises above ``RISE`` (4) x n x T(1): n rows in one forward cost at most about n forwards of one row (they
  read the weights once instead of n times), so more than 4x that is no measurement;

and it is read but called noisy (``noise_problem``: every cell projected onto it says so, and ``specbench profile``
warns as it writes one) when:

- T(n) falls with n beyond its own noise below a smaller n's at the same context: a forward of more rows does at
  least the work of fewer (a quiet machine's medians dip by a few percent at most, within its noise; a busy one
  measured T(1) = 1.40 s against 0.042 s quiet, then T(n) falling as n grew). Its noise is the two figures'
  recorded spreads together (``profile_spread``: each median's interquartile range over the median), at least
  ``MIN_FALL`` (15%: a quiet machine's neighbouring medians were seen to dip by about 10% even when each one's
  repeats agreed closely, a profile's sizes being timed in interleaved rounds, ``measure.py``); a profile without
  spreads allows ``FALL`` (30%). Not refused: what a loaded machine measures (a profile timed beside the test
  suite's own jobs dipped 37%) is a figure, but not one to trust.

>>> curve_problem({"1": 0.010, "2": 0.0095, "16": 0.02})
>>> print(curve_problem({"1": 1.4, "2": 0.3, "4": 0.35}))
T(n) falls with n: T(2) = 300 ms is 79% below T(1) = 1400 ms (more than the 30% a quiet machine's noise allows)
>>> curve_problem({"1": 0.01, "16": 5.0})
'T(16) = 5000 ms is more than 4 x 16 x T(1) = 640 ms'
>>> print(curve_problem({"1": 0.010, "2": 0.008}, {"1": 0.02, "2": 0.03}))
T(n) falls with n: T(2) = 8 ms is 20% below T(1) = 10 ms (more than the 15% its repeats' spread allows)
>>> curve_problem({"1": 0.010, "2": 0.006}, {"1": 0.3, "2": 0.2})  # (within its wide spread)
"""
from __future__ import annotations

from typing import Any, Iterable

from specbench.profiling.profile_spread import target_spreads

MIN_S, MAX_S = 1e-6, 3600.0
HOST_MIN_S, HOST_MAX_S = 1e-5, 60.0
FALL = 0.30  # how far T(n) may dip below a smaller n's at one context without recorded spreads
MIN_FALL = 0.15  # ... with them: at least this, else the two figures' spreads together
RISE = 4.0  # T(n) above RISE x n x T(1) is no measurement


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms"


def _allowed_fall(spread: dict[str, float] | None, n: int, m: int) -> tuple[float, str]:
    """How far T(n) may fall below T(m), and why: the two figures' spreads together, else ``FALL``."""
    if spread and str(n) in spread and str(m) in spread:
        return max(MIN_FALL, spread[str(n)] + spread[str(m)]), "its repeats' spread allows"
    return FALL, "a quiet machine's noise allows"


def curve_problem(curve: dict[str, float], spread: dict[str, float] | None = None) -> str | None:
    """What makes one T(n) curve impossible or noisy (see the module docstring), or None; ``spread``: its points'
    recorded relative spreads (None or missing points: unknown)."""
    return rise_problem(curve) or fall_problem(curve, spread)


def rise_problem(curve: dict[str, float]) -> str | None:
    """A T(n) above ``RISE`` x n x T(1) (no measurement: refused), or None."""
    points = sorted((int(n), float(t)) for n, t in curve.items())
    t1 = dict(points).get(1)
    bad = next(((n, t) for n, t in points if t1 is not None and t > RISE * n * t1), None)
    return None if bad is None else f"T({bad[0]}) = {_ms(bad[1])} is more than {RISE:g} x {bad[0]} x T(1) = " \
        f"{_ms(RISE * bad[0] * t1)}"


def fall_problem(curve: dict[str, float], spread: dict[str, float] | None = None) -> str | None:
    """A T(n) below a smaller n's beyond the two figures' noise (a noisy profile: flagged), or None."""
    points = sorted((int(n), float(t)) for n, t in curve.items())
    high_n, high = points[0]
    for n, t in points:
        fall, why = _allowed_fall(spread, n, high_n)
        if t < high * (1 - fall):
            return (f"T(n) falls with n: T({n}) = {_ms(t)} is {1 - t / high:.0%} below T({high_n}) = {_ms(high)} "
                    f"(more than the {fall:.0%} {why})")
        if t > high:
            high_n, high = n, t
    return None


def _out_of_bounds(values: Iterable[Any], low: float = MIN_S, high: float = MAX_S) -> float | None:
    return next((float(v) for v in values if not low <= float(v) <= high), None)


def _bounds_problem(profile: dict[str, Any]) -> str | None:
    target = profile["target"]
    parts = {"target.latency_by_context_s": [t for c in target["latency_by_context_s"].values() for t in c.values()],
             "target.prefill_s": list(target["prefill_s"].values())}
    for key, entry in profile["drafters"].items():
        parts[f"drafters.{key}.steps"] = [v["s"] for v in (entry.get("steps") or {}).values()]
    for field, values in parts.items():
        bad = _out_of_bounds(values)
        if bad is not None:
            return f"{field} holds {bad:g} s, outside {MIN_S:g} .. {MAX_S:g} s"
    if _out_of_bounds([profile["host_s"]], HOST_MIN_S, HOST_MAX_S) is not None:
        return f"host_s is {float(profile['host_s']):g} s, outside {HOST_MIN_S:g} .. {HOST_MAX_S:g} s"
    return None


def sense_problem(profile: dict[str, Any]) -> str | None:
    """What makes a (structurally valid) device profile physically impossible (refused on read), or None."""
    bad = _bounds_problem(profile)
    if bad:
        return bad
    for context, curve in profile["target"]["latency_by_context_s"].items():
        bad = rise_problem(curve)
        if bad:
            return f"target.latency_by_context_s after {context} cached tokens: {bad}"
    return None


def noise_problem(profile: dict[str, Any]) -> str | None:
    """What makes a readable device profile too noisy to trust (each projected cell says so), or None.

    >>> prof = {"target": {"latency_by_context_s": {"16": {"1": 0.237, "2": 0.149}}}}
    >>> print(noise_problem(prof))
    target.latency_by_context_s after 16 cached tokens: T(n) falls with n: T(2) = 149 ms is 37% below T(1) = 237 ms (more than the 30% a quiet machine's noise allows)
    """
    for context, curve in profile["target"]["latency_by_context_s"].items():
        bad = fall_problem(curve, target_spreads(profile, context))
        if bad:
            return f"target.latency_by_context_s after {context} cached tokens: {bad}"
    return None
