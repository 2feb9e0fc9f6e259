"""This machine's cost profile T(n, context), measured once per model x dtype x backend x device and cached.

``budget=auto`` (``specbench/engine/budget.py``) needs T(n), the seconds of one target forward of
``n`` new tokens, to weigh a bigger draft against its verification cost. A wide forward also attends
over the whole KV cache, so T(n)/T(1) grows with the context (measured on this project's CPU: T(16)/T(1)
about 1.27 after 128 cached tokens, 1.45-1.5 after 512). So the curve is measured with the engine's own
forward (``measure.measure_forward_curve``) after each of ``CONTEXTS`` cached tokens, and T at another
context is interpolated linearly between them (attention's cost is linear in the context), extrapolated
past them. It is stored as a ``specbench profile`` file (``latency_s``: the curve at the first context;
``latency_by_context_s``: every curve) under ``$SPECBENCH_CACHE/profiles/<key>.json``; the key hashes
the model's weights hash, dtype, backend, device and the hardware fingerprint (CPU model, cores and
threads, GPU, torch version), so another machine, backend or precision is measured anew. Delete the
file to re-measure (for instance after it was taken on a busy machine); each run copies the profile it
used into its folder (``profile.json``), so reports predict from the same numbers.

Example: with T(1) = 40 ms at both contexts and T(16) = 50 ms after 128 tokens, 60 ms after 512,
``cost_function(profile)(16, 320)`` is 55 ms and ``cost_function(profile)(16)`` (no context) 50 ms.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from specbench.errors import ConfigError
from specbench.profiling.measure import measure_forward_curve
from specbench.profiling.profile import load_profile, make_profile, save_profile

CONTEXTS = (128, 512)  # cached tokens before the timed forwards: a short prompt; a long prompt plus its answer
SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
REPEATS = 9
FORMAT = 2  # 2: curves per context (format 1 had one curve after 512 tokens)

Cost = Callable[..., Any]  # (n, context=None) -> seconds; numpy arrays broadcast


def profile_key(model: dict[str, Any], backend: str, hardware: dict[str, Any]) -> str:
    """12 hex digits identifying (model weights, dtype, backend, hardware)."""
    blob = json.dumps({"model": model.get("hash"), "dtype": model.get("dtype"), "backend": backend,
                       "hardware": hardware, "format": FORMAT}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def cached_cost_profile(lm: Any, backend: str, cache_root: Path, quiet: bool = False) -> tuple[dict[str, Any], Path]:
    """(profile, its file) for the loaded model ``lm`` on ``backend``: read from the cache, else measured now."""
    from specbench.profiling.fingerprint import hardware_fingerprint

    hardware = hardware_fingerprint(lm.device)
    hardware.pop("timestamp", None)
    model = {"name": lm.model_id, "id": lm.model_id, "hash": lm.model_hash, "dtype": lm.dtype}
    path = cache_root / "profiles" / f"{profile_key(model, backend, _stable(hardware))}.json"
    if path.is_file():
        try:
            return load_profile(path), path
        except ConfigError as e:
            raise ConfigError(f"{e}; delete it to measure the profile again") from None
    if not quiet:
        print(f"[specbench] measuring this machine's cost profile T(n) for budget=auto (once; cached in {path})",
              file=sys.stderr)
    curves = {c: measure_forward_curve(lm.model, c, SIZES, REPEATS, backend=backend) for c in CONTEXTS}
    prof = make_profile(curves[CONTEXTS[0]], model, CONTEXTS[0], hardware, {backend: curves[CONTEXTS[0]]})
    prof["latency_by_context_s"] = {str(c): {str(n): t for n, t in sorted(curve.items())} for c, curve in curves.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_profile(prof, path)
    return prof, path


def _stable(hardware: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint fields that identify a machine (not ones that vary between runs on it)."""
    keep = ("cpu", "cores", "torch_threads", "device", "gpu", "gpu_memory_gb", "cuda", "torch")
    return {k: hardware[k] for k in keep if k in hardware}


def _curve(points: dict[str, float]) -> Callable[[np.ndarray], np.ndarray]:
    """T(n) of one measured curve, linear between sizes and extrapolated linearly past the largest."""
    xs, ys = (np.array(v, dtype=float) for v in zip(*sorted((int(k), float(t)) for k, t in points.items())))

    def at(n: np.ndarray) -> np.ndarray:
        out = np.interp(n, xs, ys)
        if len(xs) > 1:
            slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
            out = np.where(n > xs[-1], ys[-1] + slope * (n - xs[-1]), out)
        return out

    return at


def cost_function(profile: dict[str, Any]) -> Cost:
    """``cost(n, context=None)``: seconds of a forward of ``n`` new tokens after ``context`` cached ones
    (scalars or arrays). Without a context, or for a profile of one curve, the profile's first curve."""
    base = _curve(profile["latency_s"])
    by = sorted((int(c), _curve(points)) for c, points in (profile.get("latency_by_context_s") or {}).items())

    def cost(n: Any, context: Any = None) -> Any:
        n = np.asarray(n, dtype=float)
        if context is None or len(by) < 2:
            t = base(n)
        else:
            (c0, lo), (c1, hi) = by[0], by[-1]
            t0 = lo(n)
            w = (np.asarray(context, dtype=float) - c0) / (c1 - c0)
            t = np.maximum(t0 + w * (hi(n) - t0), 0.25 * t0)  # far below the first context: never near zero
        return float(t) if t.ndim == 0 else t

    return cost
