"""A generation's token history as a numpy array that grows with the context instead of being rebuilt each step.

The engine hands the drafter ``ctx.tokens``, a list that only grows within one generation (``begin`` starts the
next one). Converting the whole list at every step costs O(length) per step; this keeps one array and copies
only the tokens added since the previous step (amortised O(new tokens)), which is what llama.cpp's loop pays
(its history is a ``std::vector`` it appends to).

>>> h = TokenHistory()
>>> h.update([5, 6, 7]).tolist()
[5, 6, 7]
>>> h.update([5, 6, 7, 8, 9]).tolist()  # only 8 and 9 are copied
[5, 6, 7, 8, 9]
>>> h.update([1, 2]).tolist()  # a shorter list is another sequence: rebuilt
[1, 2]
"""
from __future__ import annotations

import numpy as np


class TokenHistory:
    """The tokens seen so far of one sequence, as an int64 array view (read-only for callers)."""

    def __init__(self) -> None:
        self._buf = np.empty(256, dtype=np.int64)
        self._n = 0

    def reset(self) -> None:
        self._n = 0

    def update(self, tokens: list[int]) -> np.ndarray:
        """The array of ``tokens``, assuming the first ``len`` tokens seen before are unchanged (one generation's
        context only grows); a list shorter than what was seen is taken as a new sequence."""
        n = len(tokens)
        if n < self._n:
            self._n = 0
        if n > len(self._buf):
            grown = np.empty(max(n, 2 * len(self._buf)), dtype=np.int64)
            grown[: self._n] = self._buf[: self._n]
            self._buf = grown
        if n > self._n:
            self._buf[self._n : n] = tokens[self._n : n]
            self._n = n
        return self._buf[:n]
