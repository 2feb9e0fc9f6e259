"""Which stored sequences a trainer reads, and the ``DistillData`` they make.

A trainer asks for ``positions`` example starts for ``n_predict`` predicted tokens, as the per-trainer
collection did: sequences are taken in stream order, a sequence of length L answering from ``start``
gives ``L - start - n_predict - 1`` starts (none: skipped), until the count reaches ``positions``; every
``heldout_every``-th sequence of the stream is held out. So the first 20k positions of a 1M store are the
20k store, and a trainer reads exactly the sequences it used to collect.

``heldout_span``: the held-out sequences are those of the first ``heldout_span`` positions instead
(capped at ``heldout_cap`` held-out starts), so trainings of different sizes are measured on one
held-out set. Example: sequences (L - start) = 10, 6, 12 with n_predict=1 give 8, 4, 10 starts; 10
positions take the first two (8 + 4 >= 10).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from specbench.training.distill_data import DistillData
from specbench.training.feature_shards import SequenceTable


@dataclass
class Selection:
    train: np.ndarray  # rows of the table, ascending
    heldout: np.ndarray
    got: int  # starts counted over the span walked
    complete: bool  # the stored sequences reached ``positions`` (and the held-out span)


def starts_per_sequence(table: SequenceTable, n_predict: int) -> np.ndarray:
    """Example starts each stored sequence gives for ``n_predict`` (0: unusable).

    >>> t = SequenceTable(*(np.zeros(3, int) for _ in range(3)), np.array([12, 9, 15]), np.array([2, 3, 3]))
    >>> starts_per_sequence(t, 1).tolist()
    [8, 4, 10]
    """
    return np.maximum(table.length - table.start - n_predict - 1, 0)


def _prefix(counts: np.ndarray, positions: int) -> tuple[int, bool]:
    """(rows of the shortest prefix whose counts reach ``positions``, whether it did)."""
    cum = np.cumsum(counts)
    hit = int(np.searchsorted(cum, positions))  # first row with cum >= positions
    return (hit + 1, True) if hit < len(cum) else (len(cum), False)


def select(table: SequenceTable, positions: int, n_predict: int, heldout_every: int, heldout_span: int | None = None,
           heldout_cap: int | None = None) -> Selection:
    """The sequences a trainer of ``positions`` starts reads (see the module docstring)."""
    counts = starts_per_sequence(table, n_predict)
    held = table.index % heldout_every == heldout_every - 1
    end, complete = _prefix(counts, positions)
    usable = counts > 0
    rows = np.arange(len(table))
    train = rows[:end][usable[:end] & ~held[:end]]
    if heldout_span is None:
        heldout = rows[:end][usable[:end] & held[:end]]
    else:
        span_end, span_ok = _prefix(counts, heldout_span)
        complete = complete and span_ok
        heldout = rows[:span_end][usable[:span_end] & held[:span_end]]
    if heldout_cap is not None and len(heldout):
        keep = int(np.searchsorted(np.cumsum(counts[heldout]), heldout_cap)) + 1  # whole sequences, up to the cap
        heldout = heldout[:keep]
    return Selection(train, heldout, int(counts[:end].sum()), complete)


def assemble(items: list[dict], is_heldout: list[bool], n_predict: int) -> DistillData:
    """Flat ``DistillData`` over the response rows of ``items`` (``read_sequences`` dicts, stream order):
    row r of a sequence is its position ``start + r``; its starts are rows ``0 .. L - start - n_predict - 2``."""
    hid, tok, lab, lay, train, held = [], [], [], [], [], []
    base = 0
    for item, h in zip(items, is_heldout):
        rows = len(item["labels"])
        hid.append(item["hidden"])
        tok.append(torch.as_tensor(item["ids"][item["start"] :]).long())
        lab.append(item["labels"].long())
        if "layer_states" in item:
            lay.append(item["layer_states"])
        (held if h else train).append(torch.arange(base, base + rows - n_predict - 1))
        base += rows
    empty = torch.zeros(0, dtype=torch.long)
    return DistillData(torch.cat(hid), torch.cat(tok), torch.cat(lab), torch.cat(train) if train else empty,
                       torch.cat(held) if held else empty, torch.cat(lay) if lay else None)
