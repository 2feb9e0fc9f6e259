"""AR's relative top-2 logit margin at a position of its own output (the tie test of the lossless check).

The forward goes through the engine's ``TargetModel``, the one path that runs the target model.

>>> # margin = (l1 - l2) / max(|l1|, 1): logits top-2 of 10.0 and 9.5 give 0.05
>>> relative_margin(10.0, 9.5)
0.05
"""
from __future__ import annotations

from typing import Callable

import torch
from transformers import DynamicCache

from specbench.engine.verify import TargetModel


def relative_margin(top1: float, top2: float) -> float:
    return (top1 - top2) / max(abs(top1), 1.0)


def margin_at(target: TargetModel, prompt: list[int], ar_ids: list[int]) -> Callable[[int], float]:
    """``margin(pos)``: AR's relative top-2 margin when choosing ``ar_ids[pos]`` after ``prompt``."""

    def margin(pos: int) -> float:
        ids = torch.tensor([prompt + ar_ids[:pos]], dtype=torch.long, device=target.device)
        with torch.inference_mode():
            _, logits = target.forward(ids, DynamicCache(config=target.model.config), 0)
        top = torch.topk(logits[-1].float(), 2).values.tolist()
        return relative_margin(top[0], top[1])

    return margin
