"""Token Recycling's static draft tree, and its layout for expanding it level by level with numpy.

A node is a path of successor ranks from the root: ``(0, 2)`` is "the third likeliest successor of the
root's likeliest successor". The reference's template "2.2.2" has 80 nodes over 6 levels (8, 21, 25,
15, 8, 3), listed breadth first and, within a level, in lexicographic order of their paths. Here it is
written as the number of children of each inner node (children take ranks 0, 1, ... in order), which
fixes the same tree and order.

Example: a root with two children, the first of which has one child::

    >>> t = layout({(): 2, (0,): 1})
    >>> t.paths, t.parents, t.ranks.tolist(), t.level_ends
    (((0,), (1,), (0, 0)), (-1, -1, 0), [0, 1, 0], (2, 3))
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# inner node (a path of ranks) -> how many children it has; every other node is a leaf
FANOUT_2_2_2: dict[tuple[int, ...], int] = {
    (): 8,
    (0,): 8, (1,): 4, (2,): 3, (3,): 2, (4,): 1, (5,): 1, (6,): 1, (7,): 1,
    (0, 0): 8, (0, 1): 3, (0, 2): 2, (0, 3): 1, (0, 4): 1, (0, 5): 1, (0, 6): 1, (0, 7): 1,
    (1, 0): 2, (1, 1): 1, (2, 0): 1, (3, 0): 1, (4, 0): 1, (5, 0): 1,
    (0, 0, 0): 5, (0, 0, 1): 2, (0, 0, 2): 1, (0, 0, 3): 1, (0, 0, 4): 1, (0, 1, 0): 1, (0, 2, 0): 1,
    (1, 0, 0): 1, (2, 0, 0): 1, (3, 0, 0): 1,
    (0, 0, 0, 0): 3, (0, 0, 0, 1): 1, (0, 0, 0, 2): 1, (0, 0, 1, 0): 1, (0, 1, 0, 0): 1, (1, 0, 0, 0): 1,
    (0, 0, 0, 0, 0): 2, (0, 0, 0, 1, 0): 1,
}
TEMPLATES = {"2.2.2": FANOUT_2_2_2}


@dataclass(frozen=True)
class TreeLayout:
    """The template as arrays: node ``i`` is successor ``ranks[i]`` of the token in row ``parent_rows[i]`` of
    ``[root] + nodes`` (so ``parent_rows = parents + 1``); ``level_ends[d]`` = nodes of depth <= d + 1."""

    paths: tuple[tuple[int, ...], ...]
    parents: tuple[int, ...]  # DraftTree parents (-1 = the root)
    ranks: np.ndarray  # [n] int64
    parent_rows: np.ndarray  # [n] int64
    level_ends: tuple[int, ...]  # [depth]

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def depth(self) -> int:
        return len(self.level_ends)

    @property
    def max_rank(self) -> int:
        return int(self.ranks.max())

    def nodes_within(self, depth: int) -> int:
        """How many nodes lie at depth <= ``depth`` (the first ones: the layout is breadth first)."""
        if depth <= 0:
            return 0
        return self.level_ends[min(depth, self.depth) - 1]


def layout(fanout: dict[tuple[int, ...], int]) -> TreeLayout:
    """Breadth-first, lexicographic layout of the tree ``fanout`` describes."""
    paths: list[tuple[int, ...]] = []
    level = [()]
    level_ends: list[int] = []
    while True:
        children = sorted(p + (r,) for p in level for r in range(fanout.get(p, 0)))
        if not children:
            break
        paths += children
        level_ends.append(len(paths))
        level = children
    index = {p: i for i, p in enumerate(paths)}
    parents = tuple(index[p[:-1]] if len(p) > 1 else -1 for p in paths)
    return TreeLayout(
        paths=tuple(paths),
        parents=parents,
        ranks=np.array([p[-1] for p in paths], dtype=np.int64),
        parent_rows=np.array(parents, dtype=np.int64) + 1,
        level_ends=tuple(level_ends),
    )
