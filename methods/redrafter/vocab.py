"""The reduced draft vocabulary: the target ids the head scores during beam search.

Scoring all V rows of the head's LM head for every beam is most of a draft step on CPU (SmolLM2: 49,152
rows of 576, read once per beam step). The head only ever proposes tokens it saw in training, so the
beam search scores the ``size`` most frequent ones: counts of the target's argmax labels and the input
tokens of the checkpoint's training data (``data.safetensors``, written by ``specbench train redrafter``),
stop tokens always in. Ties (and every id when a checkpoint has no data) go to the lower id: a BPE
tokenizer numbers its tokens in merge order, roughly by frequency in its own training corpus.

Example: counts ``{5: 3, 2: 1}`` over V = 8, size 4, stop token 7 -> ``[0, 2, 5, 7]`` (7 kept, 5 and 2
by count, then 0 by id).
"""
from __future__ import annotations

from pathlib import Path

import torch

DATA = "data.safetensors"  # the collected training data a checkpoint folder keeps next to its head


def token_counts(ckpt_dir: Path | None, vocab_size: int) -> torch.Tensor | None:
    """``[V]`` counts of the argmax labels and tokens in ``ckpt_dir``'s training data, or None without data."""
    if ckpt_dir is None or not (ckpt_dir / DATA).is_file():
        return None
    from safetensors import safe_open

    with safe_open(str(ckpt_dir / DATA), "pt") as f:
        ids = torch.cat([f.get_tensor("argmax"), f.get_tensor("tokens")]).long()
    return torch.bincount(ids[(ids >= 0) & (ids < vocab_size)], minlength=vocab_size)


def choose_draft_vocab(counts: torch.Tensor | None, size: int, keep: set[int], vocab_size: int) -> torch.Tensor:
    """Sorted ``[min(size, V)]`` target ids: ``keep``, then by count (descending), then by id.

    >>> choose_draft_vocab(torch.tensor([0, 0, 1, 0, 0, 3, 0, 0]), 4, {7}, 8).tolist()
    [0, 2, 5, 7]
    """
    size = min(size, vocab_size)
    counts = torch.zeros(vocab_size, dtype=torch.long) if counts is None else counts.long().clone()
    for k in keep:
        if 0 <= k < vocab_size:
            counts[k] = counts.max() + 1
    # rank by (count desc, id asc): a stable sort of the ids by descending count
    order = torch.sort(counts, descending=True, stable=True).indices
    return torch.sort(order[:size]).values
