"""The reduced draft vocabulary: the target ids the head scores during beam search.

Scoring all V rows of the head's LM head for every beam is most of a draft step on CPU (SmolLM2: 49,152
rows of 576, read once per beam step). The head only ever proposes tokens it saw in training, so the
beam search scores the ``size`` most frequent ones: counts of the target's argmax labels and the input
tokens of the checkpoint's training data (``token_counts.safetensors``, written by the trainer next to the
head; ``data.safetensors`` in the folders of heads trained before the shared feature store), stop tokens
always in. Ties (and every id when a checkpoint has no data) go to the lower id: a BPE
tokenizer numbers its tokens in merge order, roughly by frequency in its own training corpus.

Example: counts ``{5: 3, 2: 1}`` over V = 8, size 4, stop token 7 -> ``[0, 2, 5, 7]`` (7 kept, 5 and 2
by count, then 0 by id).
"""
from __future__ import annotations

from pathlib import Path

import torch

from specbench.api import rank_by_count

COUNTS = "token_counts.safetensors"  # ``[V]`` counts of the training data's labels and tokens, beside the head
DATA = "data.safetensors"  # the collected training data heads trained before the feature store kept instead


def count_tokens(labels: torch.Tensor, tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``[V]`` counts of the ids in ``labels`` and ``tokens`` (ids outside ``[0, V)`` ignored).

    >>> count_tokens(torch.tensor([1, 1]), torch.tensor([3, 9]), 4).tolist()
    [0, 2, 0, 1]
    """
    ids = torch.cat([labels, tokens]).long()
    return torch.bincount(ids[(ids >= 0) & (ids < vocab_size)], minlength=vocab_size)


def save_token_counts(ckpt_dir: Path, labels: torch.Tensor, tokens: torch.Tensor, vocab_size: int) -> None:
    from safetensors.torch import save_file

    save_file({"counts": count_tokens(labels, tokens, vocab_size)}, str(ckpt_dir / COUNTS))


def token_counts(ckpt_dir: Path | None, vocab_size: int) -> torch.Tensor | None:
    """``[V]`` counts of the argmax labels and tokens of ``ckpt_dir``'s training data, or None without data."""
    from safetensors import safe_open

    if ckpt_dir is not None and (ckpt_dir / COUNTS).is_file():
        with safe_open(str(ckpt_dir / COUNTS), "pt") as f:
            return f.get_tensor("counts").long()
    if ckpt_dir is None or not (ckpt_dir / DATA).is_file():
        return None
    with safe_open(str(ckpt_dir / DATA), "pt") as f:
        return count_tokens(f.get_tensor("argmax"), f.get_tensor("tokens"), vocab_size)


def choose_draft_vocab(counts: torch.Tensor | None, size: int, keep: set[int], vocab_size: int) -> torch.Tensor:
    """Sorted ``[min(size, V)]`` target ids: ``keep``, then by count (descending), then by id.

    >>> choose_draft_vocab(torch.tensor([0, 0, 1, 0, 0, 3, 0, 0]), 4, {7}, 8).tolist()
    [0, 2, 5, 7]
    """
    counts = torch.zeros(vocab_size, dtype=torch.long) if counts is None else counts
    return torch.sort(rank_by_count(counts, min(size, vocab_size), keep)).values
