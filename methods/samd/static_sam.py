"""The static suffix automaton of a corpus at decode time: flat (memory-mapped) arrays, read with bisection.

Built by ``static_build.py``, stored and cached by ``store.py``. At each step SAM-Decoding moves its match
(state, length) over the newly accepted tokens, looks the root up without committing it, and drafts
from the state it lands on: the corpus tokens after the state's first occurrence (``continuation``),
or a tree over the state's most frequent continuations (``top_children`` with their ``count``).

Example: corpus ``a b a`` (tokens 1 2 1). After the context ``... a`` the match is "a" (length 1); the
root ``b`` leads to "ab" (length 2), first ending at position 1, so ``continuation(state, 3)`` is
``[1]`` ("a", the one token left in the corpus); ``top_children`` of "a" is ``[(2, "ab")]``.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any

import numpy as np

from specbench_methods.samd.static_build import SAMArrays, build_sam_arrays


class StaticSAM:
    """A corpus's automaton; ``header`` says what it was built from (empty for an in-memory one)."""

    def __init__(self, arrays: SAMArrays, tokens: np.ndarray, header: dict[str, Any] | None = None,
                 path: Any = None) -> None:
        self.arrays = arrays
        self.header = header or {}
        self.path = path
        # plain ndarray views: scalar reads on np.memmap go through Python code
        self.tokens = np.asarray(tokens)
        self.length = np.asarray(arrays.length)
        self.link = np.asarray(arrays.link)
        self.count = np.asarray(arrays.count)
        self.first_end = np.asarray(arrays.first_end)
        self.edge_off = np.asarray(arrays.edge_off)
        self.edge_tok = np.asarray(arrays.edge_tok)
        self.edge_dst = np.asarray(arrays.edge_dst)

    @classmethod
    def from_tokens(cls, tokens: Any, vocab_size: int) -> "StaticSAM":
        """An in-memory automaton of ``tokens`` (tests, small corpora).

        >>> sam = StaticSAM.from_tokens([1, 2, 1], 3)
        >>> sam.transfer(0, 0, 1), sam.n_states
        ((1, 1), 4)
        """
        t = np.asarray(tokens, dtype=np.int32)
        return cls(build_sam_arrays(t, vocab_size), t)

    @property
    def n_states(self) -> int:
        return len(self.length)

    def child(self, state: int, token: int) -> int:
        """The state reached from ``state`` on ``token``, or -1."""
        lo, hi = int(self.edge_off[state]), int(self.edge_off[state + 1])
        j = bisect_left(self.edge_tok, token, lo, hi)
        if j < hi and int(self.edge_tok[j]) == token:
            return int(self.edge_dst[j])
        return -1

    def transfer(self, state: int, length: int, token: int) -> tuple[int, int]:
        """The match after ``token``: the longest suffix of (matched text + token) that occurs in the corpus."""
        while True:
            nxt = self.child(state, token)
            if nxt >= 0:
                return nxt, length + 1
            if state == 0:
                return 0, 0
            state = int(self.link[state])
            length = int(self.length[state])

    def contains(self, tokens: list[int]) -> bool:
        """Whether ``tokens`` occur contiguously in the corpus."""
        state = 0
        for t in tokens:
            state = self.child(state, int(t))
            if state < 0:
                return False
        return True

    def continuation(self, state: int, n: int) -> list[int]:
        """Up to ``n`` corpus tokens after the first occurrence of ``state``'s strings."""
        start = int(self.first_end[state]) + 1
        return self.tokens[start : start + max(n, 0)].tolist()

    def top_children(self, state: int, k: int) -> list[tuple[int, int]]:
        """(token, state) of the ``k`` most frequent continuations, most frequent first; ties by token id."""
        lo, hi = int(self.edge_off[state]), int(self.edge_off[state + 1])
        dst = self.edge_dst[lo:hi]
        counts = self.count[dst]
        if len(counts) > 4 * k:  # a frequent token has thousands of continuations: keep those tying the k-th
            kth = np.partition(counts, len(counts) - k)[len(counts) - k]
            cand = np.flatnonzero(counts >= kth)  # ascending positions, i.e. ascending token ids
        else:
            cand = np.arange(len(counts))
        best = cand[np.argsort(-counts[cand], kind="stable")[:k]]
        return [(int(self.edge_tok[lo + j]), int(dst[j])) for j in best]
