"""Timing the target's forward on this machine: T(n) for n new tokens after a cached context, the bytes
of weights one forward reads, and the memory read bandwidth (so the bandwidth floor = bytes / bandwidth).

Measured with the engine's own ``TargetModel`` on each backend: chain forwards exactly as AR steps and
chain drafts run them. Nothing here runs in a unit test on the embedded model (timing it under load
takes minutes): tests inject a profile.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from specbench.engine.backends.torch_backends import resolve_backend
from specbench.engine.backends.kv_cache import trim_cache
from specbench.models.device import synchronize

DEFAULT_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)


def measure_forward_curve(model: Any, context_len: int = 1024, sizes: tuple[int, ...] = DEFAULT_SIZES,
                          repeats: int = 5, **options: Any) -> dict[int, float]:
    """Median seconds of one forward of ``n`` new tokens after ``context_len`` cached ones (``measure_forward_times``'
    repeats; ``options``: its keywords)."""
    times = measure_forward_times(model, context_len, sizes, repeats, **options)
    return {n: statistics.median(ts) for n, ts in times.items()}


def measure_forward_times(
    model: Any,
    context_len: int = 1024,
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    repeats: int = 5,
    warmup: int = 2,
    vocab_limit: int | None = None,
    seed: int = 0,
    backend: Any = "auto",
    lead_in: int = 0,
) -> dict[int, list[float]]:
    """Every timed repeat's seconds of one forward of ``n`` new tokens after ``context_len`` cached ones (the
    profile keeps their median and their spread, ``profile_spread``).

    ``lead_in`` untimed forwards of the same ``n`` run right before each timed one. Why: the rounds interleave
    the sizes, so without it every timed forward follows one of another shape, and on this project's CPU a T(1)
    timed right after a T(128) read 14-21% above a T(1) in AR's loop, where each follows another T(1)
    (docs/measurements.md, "A run projected onto another backend"). Every caller keeps 0 for now: device profiles
    measured with 1 moved that check's errors both ways (better at 1 thread, worse at 2), within the noise of
    profiles repeated on that machine.

    The forward is the engine's own: ``backend``'s (a name, or a resolved backend such as ``llamacpp``'s)
    cache and weights, a chain of ``n`` tokens with the model's default causal mask and positions, exactly
    what AR steps and chain drafts run (logits of every row, no hidden states asked).
    """
    param = next(model.parameters())
    chosen = resolve_backend(backend, param.device, param.dtype) if isinstance(backend, str) else backend
    chosen.prepare(model)
    target = chosen.target(model)
    vocab = vocab_limit or int(model.config.vocab_size)
    gen = torch.Generator().manual_seed(seed)
    with torch.inference_mode():
        cache = chosen.new_cache(model, context_len + max(sizes))
        ctx = torch.randint(0, vocab, (1, context_len), generator=gen).to(target.device)  # [1, L]
        target.run(ctx, cache, 0, last_logits_only=True, hidden=False)
        batches = {n: torch.randint(0, vocab, (1, n), generator=gen).to(target.device) for n in sizes}  # [1, n]
        times: dict[int, list[float]] = {n: [] for n in sizes}
        # rounds over every size (not one size after another): warm-up and machine drift hit all sizes alike
        for i in range(warmup + repeats):
            for n in sizes:
                for _ in range(lead_in):
                    target.run(batches[n], cache, context_len, hidden=False)
                    trim_cache(cache, context_len, [])
                synchronize(target.device)
                t = time.perf_counter()
                target.run(batches[n], cache, context_len, hidden=False)
                synchronize(target.device)
                if i >= warmup:
                    times[n].append(time.perf_counter() - t)
                trim_cache(cache, context_len, [])  # back to the long context
    return times


def weight_bytes_per_forward(model: Any) -> int:
    """Bytes of parameters one forward reads: every tensor once, the input embedding table excepted.

    A forward gathers only its tokens' rows of the input embedding; when that table is tied to the
    output head it is read whole by the head and counted once. Example: SmolLM2-135M in float32
    (tied head) -> 134.5M parameters x 4 bytes = 538 MB.
    """
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    tied = head is not None and head.weight.data_ptr() == embed.data_ptr()
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if p.data_ptr() in seen or (p.data_ptr() == embed.data_ptr() and not tied):
            continue
        seen.add(p.data_ptr())
        total += p.numel() * p.element_size()
    return total


def measure_read_bandwidth(device: Any, megabytes: int = 512, repeats: int = 7) -> float:
    """This machine's memory read bandwidth in bytes/s: the median of ``repeats`` full reads (a sum)
    of a buffer far larger than any cache (the median, not the best: single reads on a shared VM
    occasionally come out far above what the memory sustains)."""
    buf = torch.ones(megabytes * 2**20 // 4, dtype=torch.float32, device=device)
    times = []
    with torch.inference_mode():
        for i in range(repeats + 1):
            synchronize(buf.device)
            t = time.perf_counter()
            buf.sum()
            synchronize(buf.device)
            if i:  # the first read pays page faults
                times.append(time.perf_counter() - t)
    return buf.numel() * 4 / statistics.median(times)
