"""Matplotlib for every figure specbench draws, on its file-only backend (no display, no GUI toolkit)."""
from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` with the Agg backend (imported on first use: the CLI stays quick to start)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
