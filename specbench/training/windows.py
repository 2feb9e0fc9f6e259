"""Helpers every draft trainer shares (EAGLE's, EAGLE-3's, Hydra's): windows over runs of consecutive training
positions, batches packed from them, the learning-rate schedule, and the draft vocabulary chosen by label
frequency.

Example: a feature store whose training positions start at 3, 4, 5, 9 and 10 gives windows of at most 2 rows
``runs(starts, 2) == [(3, 2), (5, 1), (9, 2)]``, packed into batches of 3 rows by ``pack_runs``.
"""
from __future__ import annotations

import math
from typing import Iterator

import numpy as np
import torch

from specbench.training.distill_data import DistillData
from specbench.training.draft_vocab import rank_by_count


def runs(starts: torch.Tensor, window: int) -> list[tuple[int, int]]:
    """Windows ``(first, length)`` over runs of consecutive example starts, each at most ``window`` long.

    >>> runs(torch.tensor([3, 4, 5, 9, 10]), 2)
    [(3, 2), (5, 1), (9, 2)]
    """
    s = starts.tolist()
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        for a in range(s[i], s[j] + 1, window):
            out.append((a, min(window, s[j] + 1 - a)))
        i = j + 1
    return out


def pack_runs(windows: list[tuple[int, int]], rows: int, order: list[int]) -> Iterator[list[tuple[int, int]]]:
    """Runs ``(start, length)`` taken in ``order``, packed greedily into batches of at most ``rows`` rows (a
    run longer than ``rows`` gets a batch of its own); also used by Hydra's trainer.

    >>> list(pack_runs([(0, 3), (10, 2), (20, 4)], 5, [0, 1, 2]))
    [[(0, 3), (10, 2)], [(20, 4)]]
    """
    batch: list[tuple[int, int]] = []
    n = 0
    for w in order:
        if batch and n + windows[w][1] > rows:
            yield batch
            batch, n = [], 0
        batch.append(windows[w])
        n += windows[w][1]
    if batch:
        yield batch


def sequence_lengths(starts: torch.Tensor, size: int) -> torch.Tensor:
    """``[size]``: for each position in a run of consecutive ``starts`` (one sequence), that run's length.

    >>> sequence_lengths(torch.tensor([0, 1, 2, 5, 6]), 7).tolist()
    [3, 3, 3, 1, 1, 2, 2]
    """
    out = torch.ones(size, dtype=torch.long)
    for first, n in runs(starts, max(size, 1)):
        out[first : first + n] = n
    return out


def lr_scale(step: int, warmup: int, total: int) -> float:
    """The learning rate's factor at ``step`` of ``total``: linear warm-up over ``warmup`` steps, then cosine to 0.

    >>> [round(lr_scale(s, 2, 6), 2) for s in range(6)]
    [0.5, 1.0, 1.0, 0.85, 0.5, 0.15]
    """
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def choose_vocab(data: DistillData, size: int, keep: set[int], vocab_size: int) -> np.ndarray:
    """The ``size`` target ids the draft scores, sorted: ``keep`` (stop tokens), then the most frequent labels
    (``draft_vocab.rank_by_count``)."""
    counts = torch.bincount(data.argmax[data.train_starts + 1], minlength=vocab_size)
    return np.sort(rank_by_count(counts, min(size, vocab_size), keep).numpy()).astype(np.int64)
