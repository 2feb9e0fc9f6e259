"""The prefill's cost P(L): seconds of the target's forward over a prompt of L tokens into an empty cache.

A run records each generation's time to first token; on another machine that forward costs another time, the
same for AR and every method on a prompt. A device profile keeps P at a few prompt lengths (``prefill_s``);
``prefill_cost`` reads it linearly between them (attention's share grows with L, the weights' share does not:
piecewise linear is within a few percent between doublings) and along the last segment past the longest.

Measured as the engine's prefill runs it (``engine/loop.py``: the prompt in one forward, the head on its last
row alone, hidden states asked as a drafter would).

>>> cost = prefill_cost({"64": 0.01, "128": 0.02, "512": 0.1})
>>> [round(cost(n), 4) for n in (32, 96, 512, 1024)]
[0.01, 0.015, 0.1, 0.2067]
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np
import torch

from specbench.models.device import synchronize

LENGTHS = (16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def prefill_lengths(limit: int | None, longest: int | None = None) -> tuple[int, ...]:
    """``LENGTHS`` up to ``longest`` (the first length at or past it included), none past ``limit`` (the model's
    context), which is added as the last one when it cut the list.

    >>> prefill_lengths(1000, 300), prefill_lengths(700)
    ((16, 64, 128, 256, 512), (16, 64, 128, 256, 512, 700))
    """
    out: list[int] = []
    for n in LENGTHS:
        if limit is not None and n > limit:
            out.append(limit)
            break
        out.append(n)
        if longest is not None and n >= longest:
            break
    return tuple(sorted(set(out)))


def measure_prefill_curve(model: Any, lengths: tuple[int, ...], backend: Any, repeats: int = 3,
                          seed: int = 0) -> dict[int, float]:
    """Median seconds of the prefill of ``n`` random tokens (each of ``lengths``): ``measure_prefill_times``'."""
    return {n: statistics.median(ts) for n, ts in measure_prefill_times(model, lengths, backend, repeats, seed).items()}


def measure_prefill_times(model: Any, lengths: tuple[int, ...], backend: Any, repeats: int = 3,
                          seed: int = 0) -> dict[int, list[float]]:
    """Each timed repeat's seconds of the prefill of ``n`` random tokens (each of ``lengths``) on ``backend``
    (resolved), a fresh cache each time, after one untimed prefill of each length."""
    backend.prepare(model)
    target = backend.target(model)
    gen = torch.Generator().manual_seed(seed)
    vocab = int(model.config.vocab_size)
    out: dict[int, list[float]] = {}
    with torch.inference_mode():
        for n in lengths:
            ids = torch.randint(0, vocab, (1, n), generator=gen).to(target.device)  # [1, n]
            times = []
            for i in range(repeats + 1):
                cache = backend.new_cache(model, n + 1)
                synchronize(target.device)
                t = time.perf_counter()
                target.run(ids, cache, 0, last_logits_only=True)
                synchronize(target.device)
                if i:
                    times.append(time.perf_counter() - t)
                del cache
            out[n] = times
    return out


def prefill_cost(points: dict[str, float]) -> Callable[[float], float]:
    """``P(L)`` from a profile's ``prefill_s`` (token count -> seconds): linear between the measured lengths,
    the shortest's value below it, the last segment's slope past the longest."""
    pairs = sorted((int(k), float(v)) for k, v in points.items())
    xs = np.array([p[0] for p in pairs], dtype=float)
    ys = np.array([p[1] for p in pairs], dtype=float)
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]) if len(xs) > 1 else 0.0

    def cost(n: float) -> float:
        if n > xs[-1]:
            return float(ys[-1] + slope * (n - xs[-1]))
        return float(np.interp(n, xs, ys))

    return cost
