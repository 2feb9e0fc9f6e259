"""The 2D Jacobi window of lookahead decoding and its layout as auxiliary rows.

Coordinates are relative to the step's root (offset 0). Level 0 is ``[root] + first`` where ``first``
holds the guesses at offsets ``1, 2, ...``; level ``l >= 1`` holds tokens at offsets ``l + c`` for columns
``c = 0, 1, ...``. Token ``(l, c)`` attends to level 0's columns ``0..c`` and to its own column's tokens
on levels ``1..l-1``: a causal sequence at consecutive offsets ``0..l+c``, one Jacobi trajectory. The
model's prediction at ``(l, c)`` is a guess for offset ``l + c + 1``, i.e. for ``(l + 1, c)``.

With all ``n - 1`` levels present, column ``c`` read down the levels plus the prediction at the top
level is an n-gram (offsets ``c .. c + n - 1``) for the pool; then the window moves one position:
level 1 without its first token becomes level 0's guesses, each level moves down, and the top level's
predictions become the new top level. Before that (the first ``n - 2`` steps) the window fills up: the
top level's predictions become a new level and every level drops its first column.

Example (window 2, n 3): start ``first = [a, b]`` (``window + n - 3`` tokens copied from the prompt);
step 1 predicts ``[p, q]`` at ``a, b`` -> ``first = [b]``, level 1 = ``[p, q]``; the window is full. Step 2
predicts ``[x, y]`` at level 1: the n-grams ``(root, p, x)`` and ``(b, q, y)`` go to the pool, and the
window becomes ``first = [q]``, level 1 = ``[x, y]``.
"""
from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from specbench.api import AuxRows


class JacobiWindow:
    """``levels[0]`` is level 0 without the root; ``levels[l]`` is level ``l``."""

    def __init__(self, window: int, n: int, prompt: Sequence[int], rng: random.Random) -> None:
        if window < 1 or n < 3:
            raise ValueError("lookahead needs window >= 1 and n-gram size >= 3")
        if not prompt:
            raise ValueError("lookahead copies its first guesses from the prompt: empty prompt")
        self.window, self.n = window, n
        self.levels: list[list[int]] = [[rng.choice(list(prompt)) for _ in range(window + n - 3)]]

    @property
    def full(self) -> bool:
        return len(self.levels) == self.n - 1

    def layout(self) -> AuxRows:
        """The window as auxiliary rows: level 0's guesses, then level 1, 2, ... column by column."""
        index: dict[tuple[int, int], int] = {}
        tokens: list[int] = []
        offsets: list[int] = []
        for col, tok in enumerate(self.levels[0], start=1):
            index[(0, col)] = len(tokens)
            tokens.append(tok)
            offsets.append(col)
        for level in range(1, len(self.levels)):
            for col, tok in enumerate(self.levels[level]):
                index[(level, col)] = len(tokens)
                tokens.append(tok)
                offsets.append(level + col)
        attends = np.zeros((len(tokens), len(tokens)), dtype=bool)
        for (level, col), row in index.items():
            for c in range(1, col + 1):  # level 0's guesses up to this column (the root is always visible)
                attends[row, index[(0, c)]] = True
            for lv in range(1, level + 1):  # this column on the levels above 0, itself included
                attends[row, index[(lv, col)]] = True
        return AuxRows(tuple(tokens), tuple(offsets), attends)

    def advance(self, root: int, predictions: Sequence[int]) -> list[tuple[int, ...]]:
        """Take the model's predictions at ``layout()``'s rows; return the n-grams the window completed.

        Each n-gram is ``(key, *continuation)``: the key is level 0's token in that column (the root for
        column 0).
        """
        top = len(self.levels) - 1
        start = len(self.levels[0]) + sum(len(lv) for lv in self.levels[1:top]) if top else 0
        top_preds = [int(p) for p in predictions[start : start + len(self.levels[top])]]
        if not self.full:
            new_top = top_preds if top == 0 else top_preds[1:]
            self.levels = [lv[1:] for lv in self.levels] + [new_top]
            return []
        zero = [root] + self.levels[0]
        grams = [
            (zero[c], *(self.levels[lv][c] for lv in range(1, self.n - 1)), top_preds[c])
            for c in range(self.window)
        ]
        self.levels = [self.levels[1][1:]] + self.levels[2:] + [top_preds]
        return grams
