"""Step 4: the cost profile T(n)/T(1), n = 1..64, of a Llama-7B-shaped random-weight model in bfloat16 after
1k and 8k cached tokens, measured with the project's own timer (``specbench.profiling.measure``) and written
as a ``specbench profile`` file (``latency_by_context_s``, as ``budget=auto`` caches it), so its choices on a
real accelerator can be read. The model is built on the device from a config (no weights travel; nothing
passes through CPU memory). CPU smoke mode measures a tiny config after 32 and 128 tokens instead.

Example of the ratio table it returns (context -> n -> T(n)/T(1))::

    {"1024": {"1": 1.0, "2": 1.01, "4": 1.02, ..., "64": 1.3}, "8192": {...}}
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from specbench.profiling import measure
from specbench.profiling.profile import make_profile, save_profile

SIZES = tuple(range(1, 65))
SHOWN = (1, 2, 4, 8, 16, 32, 64)  # the sizes the summary's table shows (the file holds all 64)
LLAMA_7B = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                num_attention_heads=32, num_key_value_heads=32)
TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2)


def build_model(shape: dict[str, int], device: str, dtype: torch.dtype, context: int) -> torch.nn.Module:
    """A random Llama of ``shape`` made directly on ``device`` in ``dtype`` (no CPU copy of its weights)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**shape, max_position_embeddings=context + max(SIZES), bos_token_id=None, eos_token_id=None,
                      pad_token_id=None)
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        torch.manual_seed(0)
        with torch.device(device):
            return LlamaForCausalLM(cfg).eval()
    finally:
        torch.set_default_dtype(before)


def ratios(curve: dict[int, float]) -> dict[str, float]:
    """T(n)/T(1) at the ``SHOWN`` sizes.

    >>> ratios({n: 0.01 * (1 + 0.01 * (n - 1)) for n in SIZES})["64"]
    1.63
    """
    return {str(n): round(curve[n] / curve[1], 3) for n in SHOWN if n in curve}


def measure_profile(out: Path, device: str, smoke: bool, deadline: float) -> dict[str, Any]:
    """Measure every context's curve (stopping, and saying so, when ``deadline`` on ``time.monotonic`` is
    past before a context starts), save the profile as ``out``; its T(n)/T(1) table and timings."""
    from specbench.models.device import steady_attention_kernels
    from specbench.profiling.fingerprint import hardware_fingerprint

    steady_attention_kernels()  # the attention kernels a run's models use (``specbench.models.loading``)
    shape, contexts = (TINY, (32, 128)) if smoke else (LLAMA_7B, (1024, 8192))
    dtype = torch.float32 if smoke else torch.bfloat16
    start = time.monotonic()
    model = build_model(shape, device, dtype, max(contexts))
    built_s = time.monotonic() - start
    curves: dict[int, dict[int, float]] = {}
    stopped = None
    for context in contexts:
        if time.monotonic() > deadline:
            stopped = f"stopped before context {context}: past its time budget"
            break
        curves[context] = measure.measure_forward_curve(model, context, SIZES, repeats=5, warmup=2)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    if curves:
        first = min(curves)
        info = {"name": "llama-7b-shaped-random" if not smoke else "tiny-llama-random", "dtype": str(dtype)[6:]}
        prof = make_profile(curves[first], info, first, hardware_fingerprint(torch.device(device)))
        prof["latency_by_context_s"] = {str(c): {str(n): t for n, t in sorted(cv.items())} for c, cv in curves.items()}
        save_profile(prof, out)
    return {"build_s": round(built_s, 1), "contexts": list(curves), "stopped": stopped,
            "t1_ms": {str(c): round(cv[1] * 1e3, 3) for c, cv in curves.items()},
            "ratio": {str(c): ratios(cv) for c, cv in curves.items()}}
