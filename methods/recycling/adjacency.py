"""The adjacency matrix of Token Recycling: for each token id, its k likeliest successors, recycled from
the target's logits at every verification, and the draft tree it expands into.

``update(inputs, topk)``: row ``inputs[i]`` of the matrix becomes ``topk[i]`` (the ids of the k largest
logits the target computed at a row whose input token was ``inputs[i]``). A token seen several times in one
verification keeps its last row in tree order. ``expand(root, layout, depth)`` fills the static tree level
by level: node ``(r_1, ..., r_d)`` is successor ``r_d`` of its parent's token (one numpy gather per level).

Worked example (vocabulary 6, k = 2, all rows start at token 0)::

    >>> m = Adjacency(vocab=6, k=2)
    >>> m.update(np.array([3, 4]), np.array([[4, 5], [1, 2]]))  # after 3 the model likes 4 then 5; after 4: 1, 2
    >>> from specbench_methods.recycling.template import layout
    >>> tree = layout({(): 2, (0,): 2})  # (0,), (1,), (0, 0), (0, 1)
    >>> m.expand(3, tree, depth=2).tolist()
    [4, 5, 1, 2]

The root 3 gives its successors 4 and 5; the likeliest, 4, gives its own two, 1 and 2.
"""
from __future__ import annotations

import numpy as np

from specbench_methods.recycling.template import TreeLayout


class Adjacency:
    """``[vocab, k]`` successor ids (int64), all 0 at first (as the reference's ``torch.zeros``), and which
    rows were ever written (``seen``)."""

    def __init__(self, vocab: int, k: int) -> None:
        self.k = k
        self.matrix = np.zeros((vocab, k), dtype=np.int64)
        self.seen = np.zeros(vocab, dtype=bool)

    def reset(self) -> None:
        self.matrix[:] = 0
        self.seen[:] = False

    def update(self, inputs: np.ndarray, topk: np.ndarray) -> None:
        """``inputs`` [n] token ids, ``topk`` [n, >= k] their rows' successor ids, best first."""
        # numpy's assignment with repeated indices keeps the last value: a token verified at several
        # rows keeps the row latest in tree order (the reference's GPU scatter keeps an arbitrary one)
        self.matrix[inputs] = topk[:, : self.k]
        self.seen[inputs] = True

    def expand(self, root: int, tree: TreeLayout, depth: int) -> np.ndarray:
        """Token ids of the first ``tree.nodes_within(depth)`` nodes of ``tree`` grown from ``root`` ([n])."""
        n = tree.nodes_within(depth)
        rows = np.empty(n + 1, dtype=np.int64)  # [root] + nodes
        rows[0] = root
        start = 0
        for end in tree.level_ends:
            end = min(end, n)
            if end <= start:
                break
            lv = slice(start, end)
            rows[1 + start : 1 + end] = self.matrix[rows[tree.parent_rows[lv]], tree.ranks[lv]]
            start = end
        return rows[1:]

    def known(self, root: int, tokens: np.ndarray, tree: TreeLayout) -> np.ndarray:
        """[n] bool: every token on the node's path from the root, the root included, has a written row
        (its successors are the model's, not the zeros it started with)."""
        n = len(tokens)
        rows = np.concatenate([[root], tokens])
        ok = np.empty(n + 1, dtype=bool)
        ok[0] = True
        parent_rows = tree.parent_rows[:n]
        parent_ok = self.seen[rows[parent_rows]]
        start = 0
        for end in tree.level_ends:  # a level's parents are settled before it
            end = min(end, n)
            if end <= start:
                break
            lv = slice(start, end)
            ok[1 + start : 1 + end] = parent_ok[lv] & ok[parent_rows[lv]]
            start = end
        return ok[1:]
