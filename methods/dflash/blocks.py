"""DFlash's training blocks: anchors drawn in each sequence, the block each one starts, its positions, labels,
loss weights and the attention mask over ``[context rows, every block's rows]``.

A sequence of the feature store is ``T`` consecutive response rows; row ``r`` holds the target's states at it
and ``argmax[r]``, the target's greedy choice of the token at ``r + 1``. An anchor ``a`` (``1 <= a <= T - 2``)
stands for a drafting step whose root sits at row ``a``: its block is ``[token a, MASK x (B - 1)]`` at positions
``a .. a + B - 1``; it sees the context rows ``0 .. a - 1`` (the rows the target has states for when the root is
drafted from) and every row of its own block, none of another block; block row ``j >= 1`` is scored against
``argmax[a + j - 1]`` (the target's token at ``a + j``), while that stays inside the sequence, with weight
``exp(-(j - 1) / gamma)`` (the reference's decay: early rows decide how much of a block is accepted).

Many anchors of one sequence share one forward: their blocks are laid side by side, ``A x B`` query rows over
``T + A x B`` keys. Example: anchors ``[2, 4]``, ``B = 2``, ``T = 5``: block rows 0-1 (anchor 2) see context
columns 0-1 and key columns 5-6; rows 2-3 (anchor 4) see context 0-3 and columns 7-8.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

IGNORE = -100  # a block row without a label


def block_positions(anchors: torch.Tensor, block: int) -> torch.Tensor:
    """``[S, A * B]``: position ``anchor + j`` of each block row (padding anchors ``-1`` get ``j - 1``).

    >>> block_positions(torch.tensor([[2, 4]]), 2).tolist()
    [[2, 3, 4, 5]]
    """
    return (anchors[..., None] + torch.arange(block, device=anchors.device)).flatten(-2)


def block_mask(anchors: torch.Tensor, context_rows: int, block: int) -> torch.Tensor:
    """``[S, A * B, T + A * B]`` bool (True = may attend): a row of anchor ``a`` sees context columns ``c < a`` and
    its own block's rows, bidirectionally; a padding anchor (``-1``) sees its own block only.

    >>> block_mask(torch.tensor([[2, 4]]), 5, 2)[0].int().tolist()
    [[1, 1, 0, 0, 0, 1, 1, 0, 0], [1, 1, 0, 0, 0, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0, 0, 1, 1], [1, 1, 1, 1, 0, 0, 0, 1, 1]]
    """
    n_anchors = anchors.shape[-1]
    dev = anchors.device
    row_anchor = anchors.repeat_interleave(block, -1)  # [S, A*B]
    context = torch.arange(context_rows, device=dev) < row_anchor[..., None]  # [S, A*B, T]
    which = torch.arange(n_anchors, device=dev).repeat_interleave(block)  # [A*B]: each row's block
    own = (which[:, None] == which[None, :]).expand(*anchors.shape[:-1], -1, -1)  # [S, A*B, A*B]
    return torch.cat([context, own], -1)


def loss_weights(block: int, gamma: float) -> torch.Tensor:
    """``[B]``: 0 for the root's row, ``exp(-(j - 1) / gamma)`` for block row ``j >= 1``.

    >>> [round(w, 3) for w in loss_weights(4, 7.0).tolist()]
    [0.0, 1.0, 0.867, 0.751]
    """
    j = torch.arange(block, dtype=torch.float32)
    return torch.where(j == 0, torch.zeros(()), torch.exp(-(j - 1) / gamma))


def draw_anchors(length: int, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` distinct anchors of a ``length``-row sequence, at random, ascending (fewer when it is short).

    >>> draw_anchors(5, 10, torch.Generator().manual_seed(0)).tolist()
    [1, 2, 3]
    """
    valid = max(length - 2, 0)  # rows 1 .. length - 2: a context row before, a label after
    pick = torch.randperm(valid, generator=generator)[: min(count, valid)]
    return torch.sort(pick).values + 1


def spaced_anchors(length: int, block: int) -> torch.Tensor:
    """Held-out anchors: every ``block``-th row from 1, so the blocks tile the sequence (deterministic).

    >>> spaced_anchors(12, 4).tolist()
    [1, 5, 9]
    """
    return torch.arange(1, max(length - 1, 1), block)


@dataclass
class Blocks:
    """A batch of ``S`` sequences padded to ``T`` rows, ``A`` anchors each (``-1``: padding).

    ``layer_states [S, T, F, H_t]``; ``ids``, ``labels``, ``positions [S, A * B]``; ``mask [S, A * B, T + A * B]``.
    """

    layer_states: torch.Tensor
    ids: torch.Tensor
    labels: torch.Tensor
    positions: torch.Tensor
    mask: torch.Tensor


def make_blocks(sequences: list[tuple[int, int]], anchors: list[torch.Tensor], arrays: "BlockArrays",
                block: int, mask_token: int) -> Blocks:
    """The padded batch of ``sequences`` (first flat row, rows) with their ``anchors`` (rows within each)."""
    s, t = len(sequences), max(n for _, n in sequences)
    a = max(1, max(len(x) for x in anchors))
    anchor = torch.full((s, a), -1, dtype=torch.long)
    for i, x in enumerate(anchors):
        anchor[i, : len(x)] = x
    states = arrays.layer_states
    lay = states.new_zeros(s, t, *states.shape[1:])
    ids = torch.full((s, a, block), mask_token, dtype=torch.long)
    labels = torch.full((s, a, block), IGNORE, dtype=torch.long)
    j = torch.arange(1, block)
    for i, (first, n) in enumerate(sequences):
        lay[i, :n] = states[first : first + n]
        k = len(anchors[i])
        if not k:
            continue
        at = anchors[i][:, None]  # [k, 1]
        ids[i, :k, 0] = arrays.tokens[first + anchors[i]]
        target_row = at + j - 1  # [k, B-1]: argmax row of the token at a + j
        ok = at + j <= n - 1
        labels[i, :k, 1:] = torch.where(ok, arrays.argmax[first + target_row.clamp(max=n - 1)], IGNORE)
    return Blocks(lay, ids.flatten(1), labels.flatten(1), block_positions(anchor, block).clamp(min=0),
                  block_mask(anchor, t, block))


@dataclass
class BlockArrays:
    """The flat per-row arrays a batch is cut from (``DistillData``'s ``tokens``, ``argmax``, ``layer_states``)."""

    tokens: torch.Tensor
    argmax: torch.Tensor
    layer_states: torch.Tensor


def accepted_lengths(hits: torch.Tensor) -> torch.Tensor:
    """``[N]``: per block, how many leading rows ``1..`` are right (``hits [N, B - 1]`` bool): what the engine would
    accept if the context were the target's own text.

    >>> accepted_lengths(torch.tensor([[True, True, False, True], [False, True, True, True]])).tolist()
    [2, 0]
    """
    return hits.long().cumprod(-1).sum(-1)
