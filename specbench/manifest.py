"""The run manifest: hardware fingerprint, software versions, model, and the full configuration."""
from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from specbench.device import precision_flags

# the manifest's own format; records carry theirs (``specbench.record.SCHEMA_VERSION``)
MANIFEST_SCHEMA_VERSION = 1


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
        from specbench.gpu_info import cuda_fingerprint

        hw.update(cuda_fingerprint(device))
    hw["precision"] = precision_flags()
    return hw


def versions() -> dict[str, str]:
    import transformers

    from specbench import __version__

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "specbench": __version__,
    }


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, timeout=10,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, timeout=10,
        ).stdout.strip()
        return (out.stdout.strip() + ("-dirty" if dirty else "")) or None
    except (OSError, subprocess.SubprocessError):
        return None


def build_manifest(device: torch.device | str | None = None, **fields: Any) -> dict[str, Any]:
    """A manifest dict: schema version, timestamp, hardware of ``device``, versions, git commit, command, plus ``fields``."""
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "hardware": hardware(device),
        "versions": versions(),
        "git_commit": git_commit(),
        **fields,
    }
