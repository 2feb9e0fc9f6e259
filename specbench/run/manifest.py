"""The run manifest: hardware fingerprint, software versions, model, and the full configuration."""
from __future__ import annotations

import datetime as dt
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from specbench.profiling.fingerprint import hardware

# the manifest's own format; records carry theirs (``specbench.results.record.SCHEMA_VERSION``)
MANIFEST_SCHEMA_VERSION = 1


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
