"""Device helpers shared by the engine, the runner and the profile.

``synchronize(torch.device("cpu"))`` is a no-op; on CUDA it waits for the kernels queued on *that*
device (``cuda:1`` syncs GPU 1, not the current default GPU), so timings bracket real work.
"""
from __future__ import annotations

import torch


def synchronize(device: torch.device | str) -> None:
    """Wait until every kernel queued on ``device`` has finished (no-op off CUDA)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
