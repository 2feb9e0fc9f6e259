"""The one rule by which a trained drafter picks the target tokens it scores (a reduced draft vocabulary): the
tokens it must keep (stop tokens), then the most frequent of its training data, ties by the smaller id.

EAGLE, Hydra, Medusa (through ``windows.choose_vocab``), EAGLE-3, ReDrafter and the SpS draft each count their own
data (labels, inputs, or both: their references differ) and keep the ids their own layout needs (sorted, or in
rank order with a slot for every other token); the ranking is this one.

Example: counts 3, 0, 5, 3 for ids 0-3 and stop token 1 kept: ``rank_by_count`` -> 1, 2, 0, 3 (0 before 3: a tie).
"""
from __future__ import annotations

from typing import Iterable

import torch


def rank_by_count(counts: torch.Tensor, size: int, keep: Iterable[int] = (), seen_only: bool = False) -> torch.Tensor:
    """The first ``size`` ids of the ranking: ``keep`` (ids inside ``counts``, smallest first), then the other ids
    by count (descending), ties by id; ``seen_only``: ids with a zero count are left out (unless kept).

    >>> rank_by_count(torch.tensor([3, 0, 5, 3]), 4, keep={1}).tolist()
    [1, 2, 0, 3]
    >>> rank_by_count(torch.tensor([3, 0, 5, 3]), 4, seen_only=True).tolist()
    [2, 0, 3]
    """
    counts = torch.as_tensor(counts).long().flatten()
    kept = sorted({int(k) for k in keep if 0 <= int(k) < counts.numel()})
    order = torch.sort(counts, descending=True, stable=True).indices  # (a stable sort: equal counts stay in id order)
    rest = torch.ones(counts.numel(), dtype=torch.bool)
    rest[kept] = False
    if seen_only:
        rest &= counts > 0
    order = order[rest[order]]
    return torch.cat([torch.tensor(kept, dtype=torch.long), order])[: max(0, size)]
