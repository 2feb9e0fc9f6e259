"""Where one decode forward's time goes on CPU: matrix products, the other operators, and the rest
(Python and framework overhead between operators), from ``torch.profiler`` self times.

The bandwidth floor assumes every weight byte streams at the machine's read bandwidth. The breakdown
says which part of the gap is the matrix kernels themselves (their effective bandwidth) and which part
is everything around them, so a user can tell a kernel limit from an engine overhead.

Example (embedded model, fast backend, 2-core VM): a 42 ms forward = 26 ms of matrix products
(538 MB at 21 GB/s) + 6 ms of other operators + 10 ms of overhead; floor 17 ms.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

# operators that run the weight matrices (packed oneDNN, MKL/cuBLAS through aten)
MATRIX_OPS = frozenset({"mkldnn::_linear_pointwise", "aten::addmm", "aten::mm", "aten::linear_pointwise"})


def measure_breakdown(model: Any, context_len: int = 256, forwards: int = 10, backend: str = "auto",
                      seed: int = 0) -> dict[str, float] | None:
    """Seconds per single-token forward: ``wall`` (median, unprofiled), ``matrix`` and ``other_ops``
    (operator self times under the profiler), ``overhead`` (the rest of ``wall``).

    CPU only (on an accelerator the host-side times say nothing about the kernels), torch backends only:
    ``None`` elsewhere.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    from specbench.engine.backends.registry import backend_spec
    from specbench.engine.backends.torch_backends import resolve_backend
    from specbench.engine.backends.kv_cache import trim_cache

    param = next(model.parameters())
    spec = backend_spec(backend) if isinstance(backend, str) else None
    if param.device.type != "cpu" or spec is None or not spec.torch_forward:
        return None  # (torch's profiler sees nothing of another engine's kernels, llama.cpp's)
    chosen = resolve_backend(backend, param.device, param.dtype)
    chosen.prepare(model)
    target = chosen.target(model)  # (the torch target, with the backend's caps)
    gen = torch.Generator().manual_seed(seed)
    vocab = int(model.config.vocab_size)
    with torch.inference_mode():
        cache = chosen.new_cache(model, context_len + 8)
        target.forward(torch.randint(0, vocab, (1, context_len), generator=gen), cache, 0, last_logits_only=True)
        token = torch.randint(0, vocab, (1, 1), generator=gen)
        walls = []
        for i in range(3 + forwards):  # 3 warm-up forwards, then the timed ones without the profiler
            t = time.perf_counter()
            target.forward(token, cache, context_len)
            trim_cache(cache, context_len, [])
            if i >= 3:
                walls.append(time.perf_counter() - t)
        wall = statistics.median(walls)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(forwards):
                target.forward(token, cache, context_len)
                trim_cache(cache, context_len, [])
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) / 1e6 / forwards
    matrix = sum(e.self_cpu_time_total for e in events if e.key in MATRIX_OPS) / 1e6 / forwards
    return {"wall": wall, "matrix": matrix, "other_ops": total - matrix, "overhead": max(0.0, wall - total)}


def breakdown_text(parts: dict[str, float], weight_bytes: int, floor_s: float) -> str:
    """One paragraph for ``profile.md``: each part in ms, the matrices' effective bandwidth, x floor."""
    ms = {k: v * 1e3 for k, v in parts.items()}
    gbps = weight_bytes / parts["matrix"] / 1e9 if parts["matrix"] > 0 else float("nan")
    return (
        f"One-token forward: {ms['wall']:.1f} ms = matrix products {ms['matrix']:.1f} ms "
        f"({gbps:.1f} GB/s effective, {parts['matrix'] / floor_s:.2f}x the floor on their own) + other operators "
        f"{ms['other_ops']:.1f} ms + framework overhead between operators {ms['overhead']:.1f} ms."
    )
