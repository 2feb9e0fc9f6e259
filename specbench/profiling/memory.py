"""Peak memory of one generation: CUDA max allocated on the model's GPU, else the process's peak RSS.

``reset_peak(device)`` before a generation and ``peak_memory(device)`` after it give that generation's
own peak. On CUDA that is ``torch.cuda.max_memory_allocated`` (tensors only; the caching allocator's
reserve and the CUDA context are not counted). On a CPU it is the kernel's high-water mark of the
resident set (``VmHWM``), reset through ``/proc/self/clear_refs``; where that cannot be reset (not
Linux) the kind says the peak covers the whole process so far.

>>> import torch
>>> reset_peak(torch.device("cpu")); kind, peak = peak_memory(torch.device("cpu"))
>>> kind in ("cpu_rss_peak", "cpu_rss_peak_since_start") and peak > 0
True
"""
from __future__ import annotations

import resource
import sys
from pathlib import Path

import torch

CUDA_KIND, CPU_KIND, CPU_SINCE_START_KIND = "cuda_max_allocated", "cpu_rss_peak", "cpu_rss_peak_since_start"

_cpu_resettable: bool | None = None


def reset_peak(device: torch.device) -> None:
    """Start a new peak for ``device`` (its GPU's allocator stats, or the process's RSS high-water mark)."""
    global _cpu_resettable
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return
    try:
        Path("/proc/self/clear_refs").write_text("5")  # 5: reset the peak RSS to the current RSS
        _cpu_resettable = True
    except OSError:
        _cpu_resettable = False


def _vm_hwm_bytes() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_memory(device: torch.device) -> tuple[str, int]:
    """``(kind, bytes)``: the peak since ``reset_peak(device)`` (see the module docstring for the kinds)."""
    if device.type == "cuda":
        return CUDA_KIND, int(torch.cuda.max_memory_allocated(device))
    hwm = _vm_hwm_bytes()
    if hwm is not None and _cpu_resettable:
        return CPU_KIND, hwm
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return CPU_SINCE_START_KIND, hwm or int(maxrss * (1 if sys.platform == "darwin" else 1024))
