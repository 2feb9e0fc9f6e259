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


def hardware() -> dict[str, Any]:
    """CPU model, cores, RAM, and GPU name/memory/CUDA when present."""
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
        "cuda": torch.version.cuda,
        "driver": None,
        "torch_threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        hw.update(gpu=props.name, gpu_memory_gb=round(props.total_memory / 2**30, 1))
        try:
            hw["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=10,
            ).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            pass
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


def build_manifest(**fields: Any) -> dict[str, Any]:
    """A manifest dict: schema version, timestamp, hardware, versions, git commit, command, plus ``fields``."""
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "hardware": hardware(),
        "versions": versions(),
        "git_commit": git_commit(),
        **fields,
    }
