"""The CUDA fingerprint of the one GPU a run used (for the manifest); nothing here runs on a CPU run.

The GPU is identified by its torch index *and* UUID: with ``CUDA_VISIBLE_DEVICES`` the torch index is
not nvidia-smi's, so nvidia-smi's per-GPU rows are matched by UUID (by index only when the UUID is
unknown). The driver's own CUDA version comes from nvidia-smi's header, not ``torch.version.cuda``
(the runtime torch was built with).

>>> rows = parse_gpu_rows("0, GPU-aa, 550.54\\n1, GPU-bb, 550.54\\n")
>>> pick_row(rows, index=1, uuid="GPU-bb")["driver_version"]
'550.54'
>>> parse_driver_cuda("| NVIDIA-SMI 550.54   Driver Version: 550.54   CUDA Version: 12.4 |")
'12.4'
"""
from __future__ import annotations

import re
import subprocess
from typing import Any

import torch

SMI_FIELDS = ("index", "uuid", "driver_version")


def _smi(*args: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def parse_gpu_rows(csv_text: str) -> list[dict[str, str]]:
    """``nvidia-smi --query-gpu=index,uuid,driver_version --format=csv,noheader`` -> one dict per GPU."""
    rows = []
    for line in csv_text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(SMI_FIELDS):
            rows.append(dict(zip(SMI_FIELDS, cells)))
    return rows


def pick_row(rows: list[dict[str, str]], index: int, uuid: str | None) -> dict[str, str]:
    """The row of the GPU with ``uuid`` (else torch ``index``); {} when none matches."""
    for row in rows:
        if uuid and row["uuid"].lower() == uuid.lower():
            return row
    if not uuid:
        for row in rows:
            if row["index"] == str(index):
                return row
    return {}


def parse_driver_cuda(smi_text: str) -> str | None:
    """The highest CUDA version the installed driver supports, from nvidia-smi's banner."""
    m = re.search(r"CUDA Version:\s*([\d.]+)", smi_text)
    return m.group(1) if m else None


def _uuid(props: Any) -> str | None:
    raw = getattr(props, "uuid", None)
    if raw is None:
        return None
    text = str(raw)
    return text if text.startswith("GPU-") else f"GPU-{text}"


def cuda_fingerprint(device: torch.device) -> dict[str, Any]:
    """Name, index, UUID, compute capability, memory, driver and runtime CUDA, cuDNN of ``device``."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    uuid = _uuid(props)
    row = pick_row(parse_gpu_rows(_smi("--query-gpu=" + ",".join(SMI_FIELDS), "--format=csv,noheader")), index, uuid)
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "gpu": props.name,
        "gpu_index": index,
        "gpu_uuid": uuid,
        "compute_capability": f"{props.major}.{props.minor}",
        "gpu_memory_gb": round(props.total_memory / 2**30, 1),
        "cuda": torch.version.cuda,  # the runtime torch was built with
        "driver": row.get("driver_version"),
        "driver_cuda": parse_driver_cuda(_smi()),
        "cudnn": cudnn,
    }
