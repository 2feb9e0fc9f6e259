"""llama.cpp's ``common_ngram_mod`` (``common/ngram-mod.cpp``): a pool of 4M entries, each the token that followed
the last n-gram hashed into it; no key is stored, so a colliding n-gram reads another's token.

The hash is ``h = h * 6364136223846793005 + token`` over the n-gram in uint64, modulo the pool's size; the size
is a power of two, so the low bits suffice and the hash of a sliding window can be rolled in Python ints.

>>> pool = ModPool(2, size=1 << 10)
>>> pool.add_range(np.array([7, 8, 9, 7, 8, 4]), 0, 4)  # [7, 8] -> 9, [8, 9] -> 7, [9, 7] -> 8, [7, 8] -> 4
>>> pool.get(pool.hash_of([7, 8])), pool.used  # the last writer wins
(4, 3)
>>> pool.get(pool.hash_of([1, 2]))  # never added: EMPTY
-1
"""
from __future__ import annotations

import numpy as np

EMPTY = -1  # common_ngram_mod::EMPTY
POOL_SIZE = 4 * 1024 * 1024  # the server's pool: 4M int32 entries (16 MiB)
FACTOR = 6364136223846793005  # the hash's multiplier


class ModPool:
    """The pool of n-gram hash -> next token, with llama.cpp's occupancy count (``used``)."""

    def __init__(self, n: int, size: int = POOL_SIZE) -> None:
        assert size & (size - 1) == 0, "a power of two, so the hash reduces to its low bits"
        self.n, self.size = n, size
        self.entries = np.full(size, EMPTY, dtype=np.int32)
        self.used = 0
        self._mask = size - 1
        self._top = pow(FACTOR, n - 1, size)  # the oldest token's weight, to roll the window's hash

    def reset(self) -> None:
        self.entries.fill(EMPTY)
        self.used = 0

    def hash_of(self, window: list[int]) -> int:
        h = 0
        for t in window:
            h = (h * FACTOR + t) & self._mask
        return h

    def roll(self, h: int, old: int, new: int) -> int:
        """The hash of the window shifted by one: ``old`` leaves at the front, ``new`` enters at the back."""
        return ((h - old * self._top) * FACTOR + new) & self._mask

    def get(self, h: int) -> int:
        return int(self.entries[h])

    def add_range(self, text: np.ndarray, lo: int, hi: int) -> None:
        """``add`` at each start ``lo <= i < hi`` in order: the n-gram at ``i`` -> ``text[i + n]``."""
        if hi <= lo:
            return
        starts = np.arange(lo, hi)
        h = np.zeros(len(starts), dtype=np.uint64)
        for k in range(self.n):  # uint64 arithmetic wraps, as size_t's does
            h = h * np.uint64(FACTOR) + text[starts + k].astype(np.uint64)
        idx = (h & np.uint64(self._mask)).astype(np.int64)
        rev_first = np.unique(idx[::-1], return_index=True)[1]  # each index's last write wins
        last = len(idx) - 1 - rev_first
        slots = idx[last]
        self.used += int(np.count_nonzero(self.entries[slots] == EMPTY))
        self.entries[slots] = text[starts[last] + self.n]
