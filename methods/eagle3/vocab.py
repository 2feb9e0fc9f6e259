"""EAGLE-3's reduced draft vocabulary and its maps between draft ids and the target's ids.

The draft scores only ``N`` of the target's ``V`` tokens: the ``N`` most frequent tokens of the training
responses, sorted by id. The reference stores the map as two buffers of its checkpoints:

- ``d2t [N]`` (long): an *offset* per draft id, so ``target_id = draft_id + d2t[draft_id]``;
- ``t2d [V]`` (bool): whether a target id has a draft id (the training loss only counts positions whose
  target token does).

Example: target ids ``[3, 5, 9]`` kept out of ``V = 10`` -> ``d2t = [3, 4, 7]`` (``0 + 3, 1 + 4, 2 + 7``),
``t2d`` true at 3, 5 and 9; draft ids ``[2, 0]`` map to target ids ``[9, 3]``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench.api import rank_by_count


@dataclass(frozen=True)
class DraftVocab:
    """The kept target ids, sorted (``ids [N]`` long); ``None`` as a vocabulary means the whole target's."""

    ids: torch.Tensor  # [N] long, strictly increasing target ids
    vocab_size: int  # V, the target's vocabulary

    @staticmethod
    def from_ids(ids: torch.Tensor | list[int], vocab_size: int) -> "DraftVocab":
        """The vocabulary of ``ids`` (sorted, distinct; each a target id below ``vocab_size``).

        >>> DraftVocab.from_ids([9, 3, 5], 10).ids.tolist()
        [3, 5, 9]
        """
        kept = torch.unique(torch.as_tensor(ids, dtype=torch.long))  # sorted, distinct
        if kept.numel() == 0 or int(kept[0]) < 0 or int(kept[-1]) >= vocab_size:
            raise ValueError(f"a draft vocabulary needs ids in 0..{vocab_size - 1}")
        return DraftVocab(kept, vocab_size)

    @staticmethod
    def from_buffers(d2t: torch.Tensor, t2d: torch.Tensor) -> "DraftVocab":
        """The vocabulary a reference checkpoint's ``d2t`` / ``t2d`` describe (checked against each other).

        >>> DraftVocab.from_buffers(torch.tensor([3, 4, 7]), torch.isin(torch.arange(10), torch.tensor([3, 5, 9]))).ids.tolist()
        [3, 5, 9]
        """
        ids = torch.arange(d2t.numel()) + d2t.long().cpu()
        vocab = DraftVocab.from_ids(ids, int(t2d.numel()))
        if vocab.ids.numel() != d2t.numel() or not torch.equal(vocab.mask(), t2d.bool().cpu()):
            raise ValueError("d2t and t2d disagree (d2t maps draft ids to target ids that t2d does not mark)")
        return vocab

    @property
    def size(self) -> int:
        return int(self.ids.numel())

    def d2t(self) -> torch.Tensor:
        """``[N]`` offsets: ``target_id - draft_id``."""
        return self.ids - torch.arange(self.size)

    def mask(self) -> torch.Tensor:
        """``[V]`` bool: ``t2d``, true at the kept target ids."""
        out = torch.zeros(self.vocab_size, dtype=torch.bool)
        out[self.ids] = True
        return out


def most_frequent(tokens: torch.Tensor, size: int, vocab_size: int) -> DraftVocab:
    """The ``size`` most frequent ids of ``tokens`` (ties: the smaller id first), as the reference's
    ``scandata`` counts the training responses' tokens.

    >>> most_frequent(torch.tensor([7, 7, 2, 2, 5, 1]), 2, 8).ids.tolist()
    [2, 7]
    """
    counts = torch.bincount(tokens.long(), minlength=vocab_size)  # [V]
    return DraftVocab.from_ids(rank_by_count(counts, min(size, vocab_size)), vocab_size)
