"""Per-hardware cost profile: the target's forward latency T(n) for n new tokens after a long KV cache.

Speculative decoding pays one forward of ``1 + draft size`` tokens per step instead of one forward per
token. How much that costs relative to T(1) is a property of the machine (flat on a big GPU, close to
linear on a laptop CPU), so the profile explains why a method wins on one machine and loses on another:

    predicted speedup = tau * T(1) / (mean over steps of T(1 + draft size) + mean draft time per step)

Measured with the engine's own ``TargetModel`` (chain mask and positions exactly as in verification).
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from specbench.jsonfile import load_json, save_json

PROFILE_SCHEMA = 1
DEFAULT_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)


def hardware_fingerprint() -> dict[str, Any]:
    """The run manifest's hardware fingerprint plus the torch version."""
    import torch

    from specbench.manifest import hardware

    return {**hardware(), "torch": torch.__version__}


def measure_forward_curve(
    model: Any,
    context_len: int = 1024,
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    repeats: int = 5,
    warmup: int = 2,
    vocab_limit: int | None = None,
    seed: int = 0,
) -> dict[int, float]:
    """Median seconds of one forward of ``n`` new tokens (chain mask) after ``context_len`` cached ones."""
    import torch
    from transformers import DynamicCache

    from specbench.engine.cache import trim_cache
    from specbench.engine.verify import TargetModel

    target = TargetModel(model)
    vocab = vocab_limit or int(model.config.vocab_size)
    gen = torch.Generator().manual_seed(seed)
    sync: Callable[[], None] = torch.cuda.synchronize if target.device.type == "cuda" else (lambda: None)
    out: dict[int, float] = {}
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        ctx = torch.randint(0, vocab, (1, context_len), generator=gen).to(target.device)  # [1, L]
        target.forward(ctx, cache, 0)
        for n in sizes:
            ids = torch.randint(0, vocab, (1, n), generator=gen).to(target.device)  # [1, n]
            offsets = torch.arange(n, device=target.device)  # [n]
            mask = torch.ones(n, n, dtype=torch.bool, device=target.device).tril()  # [n, n]
            times = []
            for i in range(warmup + repeats):
                sync()
                t = time.perf_counter()
                target.forward(ids, cache, context_len, offsets, mask)
                sync()
                if i >= warmup:
                    times.append(time.perf_counter() - t)
                trim_cache(cache, context_len, [])  # back to the long context
            out[n] = statistics.median(times)
    return out


def make_profile(curve: dict[int, float], model_info: dict[str, Any], context_len: int, hardware: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": PROFILE_SCHEMA,
        "hardware": hardware,
        "model": model_info,
        "context_len": context_len,
        "latency_s": {str(n): t for n, t in sorted(curve.items())},
    }


def save_profile(profile: dict[str, Any], path: str | Path) -> None:
    save_json(profile, path, indent=1)


def load_profile(path: str | Path) -> dict[str, Any]:
    return load_json(path, PROFILE_SCHEMA, "latency_s", "specbench profile")


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


def predicted_speedup(records: list[dict[str, Any]], profile: dict[str, Any]) -> float | None:
    """tau * T(1) / (mean T(1 + draft size) + mean draft time) over the decode steps of ``records``."""
    tokens = passes = 0
    costs: list[float] = []
    for r in records:
        acc = r.get("accept_lengths") or []
        sizes = r.get("draft_sizes") or [0] * len(acc)
        dts = r.get("draft_times_s") or [0.0] * len(acc)
        tokens += r["new_tokens"]
        passes += len(acc)
        costs += [latency(profile, 1 + d) + t for d, t in zip(sizes[1:], dts[1:])]
    if not passes or not costs:
        return None
    tau = tokens / passes
    return tau * latency(profile, 1) / float(np.mean(costs))


def profile_table(profile: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: n, T(n) ms, T(n)/T(1), per-token ms."""
    t1 = latency(profile, 1)
    rows = []
    for k, v in sorted(((int(k), float(v)) for k, v in profile["latency_s"].items())):
        rows.append([str(k), f"{v * 1e3:.2f}", f"{v / t1:.2f}", f"{v / k * 1e3:.3f}"])
    return ["new tokens n", "T(n) ms", "T(n)/T(1)", "ms per token"], rows
