"""Device helpers shared by the engine, the runner, the profile and the manifest.

``synchronize(torch.device("cpu"))`` is a no-op; on CUDA it waits for the kernels queued on *that*
device (``cuda:1`` syncs GPU 1, not the current default GPU), so timings bracket real work.

>>> exact_reductions()["fp16_reduced_precision_reduction"]
False
>>> steady_attention_kernels()["sdpa_cudnn"]
False
"""
from __future__ import annotations

import os
from typing import Any

import torch


def synchronize(device: torch.device | str) -> None:
    """Wait until every kernel queued on ``device`` has finished (no-op off CUDA)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def select_device(device: torch.device) -> None:
    """Make ``cuda:N`` the current GPU, so nothing (a library's bare ``"cuda"``) lands on GPU 0 instead."""
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)


def exact_reductions() -> dict[str, Any]:
    """Turn off reduced-precision reductions in fp16/bf16 matmuls; returns ``precision_flags()``.

    With them on, cuBLAS may accumulate a half-precision GEMM's split-K partial sums in half
    precision, so a one-token and a multi-token forward round differently and more lossless checks
    land on ties. They are process-wide switches (no-ops on CPU).
    """
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    return precision_flags()


def steady_attention_kernels() -> dict[str, Any]:
    """Keep scaled-dot-product attention off cuDNN's kernel; returns ``precision_flags()``.

    Why: cuDNN's attention builds an execution graph for each new (query, key) length on first use and caches
    it (measured on an H200, torch 2.11: about 20 ms of CPU a build, 40 ms a step). Decoding meets a new key
    length at every step, so whichever method visits a question's lengths first (AR, timed first) paid that
    cost on every token and the methods after it did not: every GPU speedup read up to 10x too high. The
    other kernels (memory-efficient, flash, math) have no per-shape build. A process-wide switch (no-op on CPU);
    ``SPECBENCH_CUDNN_ATTENTION=1`` leaves cuDNN's kernel on (the manifest's ``sdpa_cudnn`` says which ran).
    """
    if os.environ.get("SPECBENCH_CUDNN_ATTENTION") != "1":
        torch.backends.cuda.enable_cudnn_sdp(False)
    return precision_flags()


def precision_flags() -> dict[str, Any]:
    """The process-wide numeric switches a timing or a lossless verdict depends on (for the manifest)."""
    matmul = torch.backends.cuda.matmul
    flags: dict[str, Any] = {
        "tf32_matmul": bool(matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "fp16_reduced_precision_reduction": bool(matmul.allow_fp16_reduced_precision_reduction),
        "bf16_reduced_precision_reduction": bool(matmul.allow_bf16_reduced_precision_reduction),
    }
    for kind in ("flash", "mem_efficient", "math", "cudnn"):
        enabled = getattr(torch.backends.cuda, f"{kind}_sdp_enabled", None)
        if enabled is not None:
            flags[f"sdpa_{kind}"] = bool(enabled())
    return flags
