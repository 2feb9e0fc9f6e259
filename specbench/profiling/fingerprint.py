"""The hardware fingerprint a manifest and a cost profile carry: CPU, cores, RAM, the device used, its GPU.

A profile or a run is only comparable with another taken on the same fingerprint; ``compare`` and the
leaderboard label runs with it (``specbench.reports.labels``).
"""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import torch

from specbench.models.device import precision_flags


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware(device: torch.device | str | None = None) -> dict[str, Any]:
    """CPU model, cores, RAM, the device used and, for a CUDA device, its fingerprint (``gpu_info``).

    A CPU run leaves every GPU field ``None`` even on a machine with GPUs: its numbers are the CPU's.
    ``device`` None (legacy callers) means the default GPU when CUDA exists, else the CPU.
    """
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        ram = None
    hw: dict[str, Any] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "ram_gb": round(ram, 1) if ram else None,
        "gpu": None,
        "gpu_memory_gb": None,
        "cuda": None,
        "driver": None,
        "torch_threads": torch.get_num_threads(),
    }
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    hw["device"] = str(device)
    if device.type == "cuda":
        from specbench.profiling.gpu_info import cuda_fingerprint

        hw.update(cuda_fingerprint(device))
    hw["precision"] = precision_flags()
    return hw


def hardware_fingerprint(device: Any = None) -> dict[str, Any]:
    """The run manifest's hardware fingerprint of ``device`` (the one profiled) plus the torch version."""
    return {**hardware(device), "torch": torch.__version__}
