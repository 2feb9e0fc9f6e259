"""AR's relative top-2 logit margin at a position of its own output (the tie test of the lossless check).

The engine records the margin of every token AR emits from the very logits that chose it
(``Engine.generate(..., record_margins=True)``), so in fp16/bf16 the tie test reads the same kind of
forward (one token after a KV cache) that produced the AR output. ``margin_at`` recomputes it with a
full forward, for AR records written before margins were recorded; in fp32 both agree to ~1e-7.
The forward is the engine's target's (``contract.Target.forward``), the one path that runs the target model.

>>> # margin = (l1 - l2) / max(|l1|, 1): logits top-2 of 10.0 and 9.5 give 0.05
>>> round(float(relative_margins(torch.tensor([[10.0, 1.0, 9.5]]))[0]), 6)
0.05
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from specbench.engine.backends.contract import Target


def relative_margins(logits: torch.Tensor) -> torch.Tensor:
    """Per row of ``logits`` [n, V]: ``(l1 - l2) / max(|l1|, 1)`` of its top two, in fp32, on its device."""
    top = torch.topk(logits.float(), 2, dim=-1).values  # [n, 2]
    return (top[:, 0] - top[:, 1]) / top[:, 0].abs().clamp_min(1.0)


def recorded_or_recomputed(recorded: Sequence[float] | None, target: Target, prompt: list[int],
                           ar_ids: list[int]) -> Callable[[int], float]:
    """``margin(pos)`` from AR's recorded margins when present, else ``margin_at`` (older records)."""
    if recorded is not None and len(recorded) == len(ar_ids):
        return lambda pos: float(recorded[pos])
    return margin_at(target, prompt, ar_ids)


def margin_at(target: Target, prompt: list[int], ar_ids: list[int]) -> Callable[[int], float]:
    """``margin(pos)``: AR's relative top-2 margin when choosing ``ar_ids[pos]`` after ``prompt``."""

    def margin(pos: int) -> float:
        ids = torch.tensor([prompt + ar_ids[:pos]], dtype=torch.long, device=target.device)
        with torch.inference_mode():
            _, logits = target.forward(ids, target.scratch_cache(ids.shape[1]), 0, last_logits_only=True)
        return float(relative_margins(logits)[0])

    return margin
