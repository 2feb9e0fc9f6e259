"""What a device profile must hold to be read at all: each field of the type its readers use (issue 85, defect 9).

A device profile is a user file carried from machine to machine, and every command that reads one (``project``,
``compare --onto``, ``leaderboard --onto``) reads ``machine`` and ``backend`` as objects and each drafter entry as
an object of steps: a string or a list there must be one line naming the field, not a traceback three calls later.

>>> good = {"target": {"latency_by_context_s": {"128": {"1": 0.01}}, "prefill_s": {"16": 0.02}}, "host_s": 0.004,
...         "model": {"shape": {}}, "drafters": {}, "machine": {"cpu": "x"}, "backend": {"name": "fast"}}
>>> structure_problem(good) is None
True
>>> structure_problem({**good, "machine": "x"})
'machine must be an object (the hardware fingerprint), not a string'
>>> structure_problem({**good, "drafters": {"sps:0123456789": ["steps"]}})
'drafters.sps:0123456789 must be an object holding steps, not a list'
"""
from __future__ import annotations

import math
from typing import Any

from specbench.profiling.profile_spread import spread_problem

OBJECTS = {"machine": "the hardware fingerprint", "backend": "name, key, threads", "model": "id and shape"}
TEXTS = ("dtype", "created")


def _kind(value: Any) -> str:
    """``a string``, ``a list``, ``a number``...: how a refusal names what it found instead."""
    names = {str: "a string", list: "a list", bool: "a boolean", int: "a number", float: "a number",
             type(None): "null"}
    return names.get(type(value), type(value).__name__)


def positive(v: Any) -> bool:
    """A finite number above zero (a JSON boolean is not one)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and 0 < float(v) < math.inf


def curve_ok(curve: Any) -> bool:
    """Token counts (> 0) mapped to finite positive seconds."""
    if not isinstance(curve, dict) or not curve:
        return False
    try:
        return all(int(k) > 0 and positive(v) for k, v in curve.items())
    except (TypeError, ValueError):
        return False


def _objects_problem(data: dict[str, Any]) -> str | None:
    for name, holds in OBJECTS.items():
        if name in data and not isinstance(data[name], dict):
            return f"{name} must be an object ({holds}), not {_kind(data[name])}"
    for name in TEXTS:
        if name in data and not isinstance(data[name], str):
            return f"{name} must be a string, not {_kind(data[name])}"
    threads = data.get("drafter_threads")
    if threads is not None and not (isinstance(threads, int) and not isinstance(threads, bool) and threads > 0):
        return "drafter_threads must be a positive whole number"
    return None


def _drafters_problem(drafters: Any) -> str | None:
    if not isinstance(drafters, dict):
        return f"drafters must map drafter keys to entries, not {_kind(drafters)}"
    for key, entry in drafters.items():
        if not isinstance(entry, dict):
            return f"drafters.{key} must be an object holding steps, not {_kind(entry)}"
        steps = entry.get("steps")
        if steps is not None and not (isinstance(steps, dict) and steps and all(
                str(d).isdigit() and isinstance(v, dict) and positive(v.get("s")) for d, v in steps.items())):
            return f"drafters.{key}.steps must map draft depths to {{size, s}} with positive seconds"
    return None


def structure_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a device profile's fields (a missing part, a wrong type, a non-positive figure), or None."""
    target = data.get("target")
    if not isinstance(target, dict):
        return "target must hold latency_by_context_s and prefill_s"
    by = target.get("latency_by_context_s")
    if not isinstance(by, dict) or not by or not all(str(c).isdigit() and curve_ok(v) for c, v in by.items()):
        return "target.latency_by_context_s must map each context to a curve of positive seconds"
    if not curve_ok(target.get("prefill_s")):
        return "target.prefill_s must map prompt lengths to positive seconds"
    if not positive(data.get("host_s")):
        return "host_s must be positive seconds"
    bad = _objects_problem(data)
    if bad:
        return bad
    if not isinstance(data.get("model"), dict) or not isinstance(data["model"].get("shape"), dict):
        return "model.shape is missing"
    return _drafters_problem(data.get("drafters")) or spread_problem(data)
