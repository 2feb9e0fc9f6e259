"""This machine's cost profile T(n, context), measured per model x dtype x backend x device and cached.

``budget=auto`` (``specbench/budget/auto.py``) needs T(n), the seconds of one target forward of
``n`` new tokens, to weigh a bigger draft against its verification cost. A wide forward also attends
over the whole KV cache, so T(n)/T(1) grows with the context (measured on this project's CPU: T(16)/T(1)
about 1.27 after 128 cached tokens, 1.45-1.5 after 512). So the curve is measured with the engine's own
forward (``measure.measure_forward_curve``) after each of a run's ``contexts_for``: 128 and 512 cached
tokens, then doubling (1024, 2048, ...) up to the longest context the run uses (its longest prompt plus
its generation), the last one cut so that it and the widest forward fit the model. T at another context
is interpolated linearly between the two measured contexts around it (attention's cost is linear in the
context), extrapolated past the ends along the nearest segment. It is stored as a ``specbench profile``
file (``latency_s``: the curve at the first context; ``latency_by_context_s``: every curve) under
``$SPECBENCH_CACHE/profiles/<key>.json``; the key hashes the model's weights hash, dtype, backend, device
and the hardware fingerprint (CPU model, cores and threads, GPU, torch version), so another machine,
backend or precision is measured anew. A run that needs a longer context than the cached file holds
measures only the contexts missing and adds them to it. Delete the file to re-measure (for instance after
it was taken on a busy machine); each run copies the profile it used into its folder (``profile.json``),
so reports predict from the same numbers.

Example: with T(1) = 40 ms at both contexts and T(16) = 50 ms after 128 tokens, 60 ms after 512,
``cost_function(profile)(16, 320)`` is 55 ms and ``cost_function(profile)(16)`` (no context) 50 ms; with a
third curve of T(16) = 80 ms after 1024 tokens, ``cost(16, 768)`` is 70 ms.

>>> contexts_for(300), contexts_for(3000), contexts_for(8064, limit=8192), contexts_for(900, limit=1024)
((128, 512), (128, 512, 1024, 2048, 4096), (128, 512, 1024, 2048, 4096, 8064), (128, 512, 896))
"""
from __future__ import annotations

import bisect
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from specbench.errors import ConfigError
from specbench.profiling import machine_probe
from specbench.profiling.machine_state import is_busy
from specbench.profiling.measure import measure_forward_curve
from specbench.profiling.profile import load_profile, make_profile, save_profile

CONTEXTS = (128, 512)  # cached tokens before the timed forwards: a short prompt; a long prompt plus its answer
# ... then doubling from 1024 up to the longest context a run uses (``contexts_for``)
SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
REPEATS = 9
BUSY_SUFFIX = ".busy.json"  # a profile measured on a busy machine: kept beside the cache, never read from it
FORMAT = 2  # 2: curves per context (format 1 had one curve after 512 tokens)

Cost = Callable[..., Any]  # (n, context=None) -> seconds; numpy arrays broadcast


def profile_key(model: dict[str, Any], backend: str, hardware: dict[str, Any]) -> str:
    """12 hex digits identifying (model weights, dtype, backend, hardware)."""
    blob = json.dumps({"model": model.get("hash"), "dtype": model.get("dtype"), "backend": backend,
                       "hardware": hardware, "format": FORMAT}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def contexts_for(longest: int | None = None, limit: int | None = None) -> tuple[int, ...]:
    """The contexts a run's profile measures: ``CONTEXTS``, then doublings until one reaches ``longest`` cached
    tokens; none past ``limit - max(SIZES)`` (a forward of every size must fit the model), the last one cut to it."""
    out = list(CONTEXTS)
    while longest is not None and out[-1] < longest:
        out.append(out[-1] * 2)
    if limit is not None and limit > max(SIZES):
        out = sorted({min(c, limit - max(SIZES)) for c in out})
    return tuple(out)


def cached_cost_profile(lm: Any, backend: Any, cache_root: Path, quiet: bool = False,
                        longest: int | None = None) -> tuple[dict[str, Any], Path]:
    """(profile, its file) for the loaded model ``lm`` on ``backend`` (a name or a resolved backend, whose ``key``
    names it: ``llamacpp-2t`` for llama.cpp on 2 threads), covering contexts up to ``longest`` cached tokens:
    read from the cache, with the contexts it lacks (all, the first time) measured now and added."""
    from specbench.models.context import config_context

    path, model, hardware = _cache_entry(lm, backend, cache_root)
    key = backend if isinstance(backend, str) else backend.key
    prof = None
    if path.is_file():
        try:
            prof = load_profile(path)
        except ConfigError as e:
            raise ConfigError(f"{e}; delete it to measure the profile again") from None
    have = {int(c) for c in (prof or {}).get("latency_by_context_s") or {}}
    missing = [c for c in contexts_for(longest, config_context(getattr(lm.model, "config", None))) if c not in have]
    if prof is not None and (not missing or "latency_by_context_s" not in prof):
        return prof, path  # (a format-1 file of one curve is used as it is)
    if not quiet:
        print(f"[specbench] measuring this machine's cost profile T(n) for budget=auto after "
              f"{', '.join(map(str, missing))} cached tokens (once; cached in {path})", file=sys.stderr)
    probe = machine_probe.default_probe()
    start = probe.reading()
    curves = {c: measure_forward_curve(lm.model, c, SIZES, REPEATS, backend=backend) for c in missing}
    other = machine_probe.other_cores(start, probe.reading())
    if is_busy(other, probe.cpus(), probe.cpus()):
        # a profile timed beside another job is off by up to 10x, and wrong in shape too (T(1) above T(2)): it
        # would steer every later budget=auto run; this run uses it (its folder keeps a copy), the cache does not
        path = path.with_name(path.stem + BUSY_SUFFIX)
        print(f"warning: the cost profile was measured while other processes used {other:.1f} of {probe.cpus()} "
              f"cores: this run uses it, but it is not cached (the next budget=auto run measures again)",
              file=sys.stderr)
    if prof is None:
        first = min(curves)
        prof = make_profile(curves[first], model, first, hardware, {key: curves[first]})
        prof["latency_by_context_s"] = {}
    by = prof["latency_by_context_s"]
    by.update({str(c): {str(n): t for n, t in sorted(curve.items())} for c, curve in curves.items()})
    prof["latency_by_context_s"] = {k: by[k] for k in sorted(by, key=int)}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_profile(prof, path)
    return prof, path


def cached_profile_path(lm: Any, backend: Any, cache_root: Path) -> Path:
    """Where ``cached_cost_profile`` keeps the profile of ``lm`` on ``backend`` (the file may not exist yet)."""
    return _cache_entry(lm, backend, cache_root)[0]


def _cache_entry(lm: Any, backend: Any, cache_root: Path) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """(the cached profile's file, the model's and the hardware's record) of ``lm`` on ``backend``."""
    from specbench.profiling.fingerprint import hardware_fingerprint

    hardware = hardware_fingerprint(lm.device)
    hardware.pop("timestamp", None)
    model = {"name": lm.model_id, "id": lm.model_id, "hash": lm.model_hash, "dtype": lm.dtype}
    key = backend if isinstance(backend, str) else backend.key
    return cache_root / "profiles" / f"{profile_key(model, key, _stable(hardware))}.json", model, hardware


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


def _scalar_curve(points: dict[str, float]) -> Callable[[float], float]:
    """``_curve`` for one row count, in plain Python: a budget prices a few single row counts every step, and
    numpy's per-call overhead made a price about 25 us (``cost_function``'s, 3 curves), against 4 us so.

    >>> f, g = _scalar_curve({"1": 0.02, "4": 0.05}), _curve({"1": 0.02, "4": 0.05})
    >>> [round(f(n), 6) for n in (0, 1, 2.5, 4, 6)] == [round(float(g(n)), 6) for n in (0, 1, 2.5, 4, 6)]
    True
    """
    pairs = sorted((int(k), float(t)) for k, t in points.items())
    xs, ys = [float(x) for x, _ in pairs], [y for _, y in pairs]
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]) if len(xs) > 1 else 0.0

    def at(n: float) -> float:
        if n >= xs[-1]:
            return ys[-1] + slope * (n - xs[-1])
        if n <= xs[0]:
            return ys[0]
        i = bisect.bisect_right(xs, n)
        return ys[i - 1] + (ys[i] - ys[i - 1]) * (n - xs[i - 1]) / (xs[i] - xs[i - 1])

    return at


def cost_function(profile: dict[str, Any]) -> Cost:
    """``cost(n, context=None)``: seconds of a forward of ``n`` new tokens after ``context`` cached ones
    (scalars or arrays, broadcast together). Without a context, or for a profile of one curve, the
    profile's first curve; else linear between the measured contexts around ``context``."""
    base = _curve(profile["latency_s"])
    by_context = sorted((int(c), points) for c, points in (profile.get("latency_by_context_s") or {}).items())
    by = [(c, _curve(points)) for c, points in by_context]
    at = np.array([c for c, _ in by], dtype=float)
    one_base = _scalar_curve(profile["latency_s"])
    one_by = [_scalar_curve(points) for _, points in by_context]
    at_list = [float(c) for c, _ in by_context]

    def one(n: float, context: Any) -> float:  # one row count at one context (every budget price)
        if context is None or len(one_by) < 2:
            return one_base(n)
        j = min(max(bisect.bisect_right(at_list, float(context)) - 1, 0), len(one_by) - 2)
        lo, hi, w = one_by[j](n), one_by[j + 1](n), (float(context) - at_list[j]) / (at_list[j + 1] - at_list[j])
        return max(lo + w * (hi - lo), 0.25 * one_by[0](n))

    def cost(n: Any, context: Any = None) -> Any:
        if np.ndim(n) == 0 and np.ndim(context) == 0:
            return one(float(n), context)
        n = np.asarray(n, dtype=float)
        if context is None or len(by) < 2:
            t = base(n)
        elif np.ndim(context) == 0:  # one context: its two curves alone, 5x faster
            j = min(max(int(np.searchsorted(at, float(context), side="right")) - 1, 0), len(by) - 2)
            lo, hi, w = by[j][1](n), by[j + 1][1](n), (float(context) - at[j]) / (at[j + 1] - at[j])
            t = np.maximum(lo + w * (hi - lo), 0.25 * by[0][1](n))
        else:
            n, ctx = np.broadcast_arrays(n, np.asarray(context, dtype=float))
            curves = np.stack([curve(n) for _, curve in by])  # [contexts, *shape]: T(n) at each measured context
            j = np.clip(np.searchsorted(at, ctx, side="right") - 1, 0, len(by) - 2)  # segment [at[j], at[j+1]]
            lo = np.take_along_axis(curves, j[None], 0)[0]
            hi = np.take_along_axis(curves, j[None] + 1, 0)[0]
            w = (ctx - at[j]) / (at[j + 1] - at[j])
            t = np.maximum(lo + w * (hi - lo), 0.25 * curves[0])  # far below the first context: never near zero
        return float(t) if t.ndim == 0 else t

    return cost
