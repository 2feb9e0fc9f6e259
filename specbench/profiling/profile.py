"""Per-hardware cost profile: the target's forward latency T(n) for n new tokens after a long KV cache,
as a versioned file (made, saved, validated on load, read as a curve, shown as a table).

Speculative decoding pays one forward of ``1 + draft size`` tokens per step instead of one forward per
token. How much that costs relative to T(1) is a property of the machine (flat on a big GPU, close to
linear on a laptop CPU), so the profile explains why a method wins on one machine and loses on another
(``specbench/reports/prediction.py`` prices a run's generations with it; ``budget=auto`` sizes drafts with it).

Measured with the engine's own ``TargetModel`` on each backend (chain forwards exactly as AR steps and
chain drafts run them), next to the **bandwidth floor**: the bytes of weights one forward must read
divided by this machine's measured memory read bandwidth. No forward of a weight-bound model can beat
it, so ``T(1) / floor`` says how much of a decode step is overhead.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from specbench.errors import ConfigError
from specbench.files.jsonfile import load_json, save_json

PROFILE_SCHEMA = 1


def make_profile(
    curve: dict[int, float],
    model_info: dict[str, Any],
    context_len: int,
    hardware: dict[str, Any],
    backends: dict[str, dict[int, float]] | None = None,
    floor: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The profile record. ``curve`` (``latency_s``) is the first backend's, used for predictions;
    ``backends`` holds every measured backend's curve and ``floor`` the bandwidth floor figures
    (``weight_bytes``, ``read_bytes_per_s``, ``floor_s``)."""
    prof: dict[str, Any] = {
        "schema": PROFILE_SCHEMA,
        "hardware": hardware,
        "model": model_info,
        "context_len": context_len,
        "latency_s": _by_size(curve),
    }
    if backends:
        prof["backend"] = next(iter(backends))
        prof["backends"] = {name: {"latency_s": _by_size(c)} for name, c in backends.items()}
    if floor:
        prof["bandwidth_floor"] = floor
    return prof


def _by_size(curve: dict[int, float]) -> dict[str, float]:
    return {str(n): t for n, t in sorted(curve.items())}


def save_profile(profile: dict[str, Any], path: str | Path) -> None:
    save_json(profile, path, indent=1)


def _is_curve(curve: Any) -> bool:
    """A mapping of token counts (> 0) to finite positive seconds, as every curve of a profile is."""
    if not isinstance(curve, dict) or not curve:
        return False
    try:
        return all(int(k) > 0 and not isinstance(v, bool) and 0 < float(v) < math.inf for k, v in curve.items())
    except (TypeError, ValueError):
        return False


def load_profile(path: str | Path) -> dict[str, Any]:
    """A ``profile.json``; a ``ConfigError`` unless each of its curves (``latency_s``, every context's of
    ``latency_by_context_s`` and every backend's) maps token counts to finite positive seconds."""
    data = load_json(path, PROFILE_SCHEMA, "latency_s", "specbench profile")
    bad = None if _is_curve(data["latency_s"]) else "latency_s"
    by_context = data.get("latency_by_context_s")
    if bad is None and by_context is not None:
        ok = isinstance(by_context, dict) and all(str(c).isdigit() and _is_curve(v) for c, v in by_context.items())
        bad = None if ok else "latency_by_context_s"
    backends = data.get("backends")
    if bad is None and backends is not None:
        ok = isinstance(backends, dict) and all(isinstance(b, dict) and _is_curve(b.get("latency_s"))
                                                for b in backends.values())
        bad = None if ok else "backends"
    if bad:
        what = "map token counts to positive seconds" if bad == "latency_s" else \
            "map each context to a curve of positive seconds" if bad == "latency_by_context_s" else \
            "give each backend a latency_s curve of positive seconds"
        raise ConfigError(f"{path}: not a specbench profile ({bad} must {what})")
    return data


def latency(profile: dict[str, Any], n: float) -> float:
    """T(n) interpolated linearly between measured sizes (extrapolated linearly past the ends)."""
    pts = sorted((int(k), float(v)) for k, v in profile["latency_s"].items())
    xs = np.array([p[0] for p in pts], dtype=float)
    ys = np.array([p[1] for p in pts])
    if len(xs) == 1:
        return float(ys[0])
    if n > xs[-1]:
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return float(ys[-1] + slope * (n - xs[-1]))
    return float(np.interp(n, xs, ys))


def profile_table(profile: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: n, then per backend T(n) ms and T(n)/T(1); the bandwidth floor's row last.

    With one curve (profiles from before backends existed) the columns are n, T(n) ms, T(n)/T(1) and
    ms per token.
    """
    curves = {name: b["latency_s"] for name, b in (profile.get("backends") or {}).items()}
    if not curves:
        t1 = latency(profile, 1)
        rows = []
        for k, v in sorted(((int(k), float(v)) for k, v in profile["latency_s"].items())):
            rows.append([str(k), f"{v * 1e3:.2f}", f"{v / t1:.2f}", f"{v / k * 1e3:.3f}"])
        return ["new tokens n", "T(n) ms", "T(n)/T(1)", "ms per token"], rows
    headers = ["new tokens n"]
    for name in curves:
        headers += [f"{name} T(n) ms", f"{name} T(n)/T(1)"]
    sizes = sorted({int(k) for c in curves.values() for k in c})
    rows = []
    for n in sizes:
        row = [str(n)]
        for c in curves.values():
            t, t1 = c.get(str(n)), c.get("1")
            row += [f"{t * 1e3:.2f}" if t else "-", f"{t / t1:.2f}" if t and t1 else "-"]
        rows.append(row)
    floor = (profile.get("bandwidth_floor") or {}).get("floor_s")
    if floor:
        row = ["floor (1)"]
        for c in curves.values():
            t1 = c.get("1")
            row += [f"{floor * 1e3:.2f}", f"T(1) = {t1 / floor:.2f}x floor" if t1 else "-"]
        rows.append(row)
    return headers, rows
