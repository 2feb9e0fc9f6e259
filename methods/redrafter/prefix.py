"""Dynamic tree attention, drafter side: deduplicate shared beam prefixes and pack them into a tree.

``prefix_match[b, l]`` is the first beam whose tokens ``0..l`` equal beam b's (the paper's
get_prefix_match: cumulative sum of pairwise token equality compared with ``1..L``, argmax over
beams). A (beam, position) pair is a unique node iff it is its own first match; its parent is the
node of ``(prefix_match[b, l-1], l-1)``. Column 0 is the root g0 (shared by every beam, not packed).

Example: beams ``[[7, 4, 1], [7, 4, 9], [7, 5, 1]]`` -> tokens ``[4, 1, 9, 5, 1]``, parents
``[-1, 0, 0, -1, 3]``: the shared ``4`` is verified once. Nodes come beam-major, so parents precede
children and the order equals ``DraftTree.from_chains(beams[:, 1:])``.
"""
from __future__ import annotations

import torch

from specbench.api import DraftTree


def get_prefix_match(beams: torch.Tensor) -> torch.Tensor:
    """``[W, L]`` token beams -> ``[W, L]`` index of the first beam sharing the prefix ``0..l``."""
    length = beams.shape[1]
    equal = beams.unsqueeze(1) == beams.unsqueeze(0)  # [W, W, L] beam b vs beam b' at position l
    run = torch.cumsum(equal.int(), dim=-1)  # [W, W, L] how many of 0..l are equal
    same_prefix = run == torch.arange(1, length + 1, device=beams.device)  # [W, W, L]
    # argmax over b' of a bool picks the first True; b' = b is always True, so it exists
    return same_prefix.int().argmax(dim=1)  # [W, L]


def pack_beams(beams: torch.Tensor) -> tuple[DraftTree, torch.Tensor]:
    """Pack ``[W, L]`` beams (column 0 = root) into a ``DraftTree`` of their unique draft tokens.

    Also returns ``node_of [W, L-1]``: the tree node that beam b's token at position l + 1 maps to.
    """
    width, length = beams.shape
    match = get_prefix_match(beams)  # [W, L]
    own = torch.arange(width, device=beams.device).unsqueeze(1)  # [W, 1]
    unique = (match == own)[:, 1:]  # [W, L-1] nodes of the tree (root column dropped)
    flat = unique.reshape(-1)
    node_index = (torch.cumsum(flat.int(), 0) - 1).reshape(width, length - 1)  # [W, L-1] valid where unique
    # every (b, l) maps to the node of its first matching beam
    node_of = torch.gather(node_index, 0, match[:, 1:])  # [W, L-1]
    # parent of (b, l): node of (b, l-1) (same prefix, so also the parent of its unique representative)
    parent = torch.cat([torch.full((width, 1), -1, dtype=torch.long, device=beams.device), node_of[:, :-1]], dim=1)
    tokens = beams[:, 1:][unique].tolist()
    parents = parent[unique].tolist()
    return DraftTree(tuple(tokens), tuple(parents)), node_of
