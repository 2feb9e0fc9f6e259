"""The n-gram pool of lookahead decoding: per first token, the most recent continuations seen.

Each key keeps at most ``guess`` continuations of ``n - 1`` tokens, least recently seen first; adding one
already present moves it to the back, adding one to a full key drops the oldest (LADE's LRU policy).

Example (n = 3, guess = 2): ``add_sequence([1, 2, 3, 1, 2, 4])`` stores ``1 -> [(2, 3), (2, 4)]``,
``2 -> [(3, 1), (4, ...)]`` ... ; then ``guesses(1)`` -> ``[(2, 3), (2, 4)]``.
"""
from __future__ import annotations

from typing import Sequence


class NgramPool:
    """Continuations of ``n - 1`` tokens keyed by the token before them."""

    def __init__(self, n: int, guess: int) -> None:
        if n < 2:
            raise ValueError("n-grams need n >= 2")
        self.n = n
        self.guess = guess
        self._map: dict[int, list[tuple[int, ...]]] = {}

    def add(self, key: int, continuation: Sequence[int]) -> None:
        """Record ``continuation`` after ``key`` (most recent last; at most ``guess`` per key)."""
        if self.guess < 1:
            return
        cont = tuple(int(t) for t in continuation)
        entries = self._map.setdefault(int(key), [])
        if cont in entries:
            entries.remove(cont)
        elif len(entries) >= self.guess:
            del entries[0]
        entries.append(cont)

    def add_ngram_ending_at(self, tokens: Sequence[int], end: int) -> None:
        """Record the n-gram ``tokens[end - n + 1 : end + 1]`` (nothing if it would start before 0)."""
        start = end - self.n + 1
        if start >= 0:
            self.add(tokens[start], tokens[start + 1 : end + 1])

    def add_sequence(self, tokens: Sequence[int]) -> None:
        """Record every n-gram of ``tokens`` in order."""
        for end in range(self.n - 1, len(tokens)):
            self.add_ngram_ending_at(tokens, end)

    def guesses(self, key: int) -> list[tuple[int, ...]]:
        """The continuations stored after ``key``, least recently seen first."""
        return list(self._map.get(int(key), ()))

    def __len__(self) -> int:
        return sum(len(v) for v in self._map.values())
