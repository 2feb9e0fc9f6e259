"""A suffix automaton with occurrence counts: the numbers SuffixDecoding reads from its suffix trees.

The reference keeps, per tree, every suffix of every sequence cut to ``max_depth`` tokens; a node's count
is how many of those suffixes pass through or end at it. For a string ``s`` of at most ``max_depth``
tokens that is exactly the number of places ``s`` occurs in the sequences, and a node's children are
the tokens that follow those occurrences. A suffix automaton (Blumer et al. 1985) answers the same
questions: every substring lies in one state, all strings of a state occur at the same end positions
(so they share the count and the continuations), and the transition by ``t`` from the state of ``s``
leads to the state of ``s + t``. It has at most 2n states for n tokens and is built online in amortised
O(1) per token (the count update walks the suffix links of the new end), where a Python suffix trie of
64-token suffixes would create up to 64 nodes per token. Several sequences share one automaton
(the generalised construction: each starts again from the root).

Example: one sequence ``[1, 2, 1, 2, 3]``::

    >>> a = SuffixAutomaton()
    >>> end = a.extend_all(0, [1, 2, 1, 2, 3])
    >>> a.count_of([1, 2]), a.count_of([2]), a.count_of([2, 1]), a.count_of([3, 1])
    (2, 2, 1, 0)
    >>> s = a.walk([1, 2]); sorted((tok, a.count[c]) for tok, c in a.next[s].items())  # 1 2 -> 1 or 3
    [(1, 1), (3, 1)]
    >>> state, m = a.match([7, 2, 1, 2]); m  # the longest suffix of the pattern that occurs: [2, 1, 2]
    3
    >>> a.count[state], a.count[a.shorten(state, 1)]  # [2, 1, 2] once; its suffix [2] twice
    (1, 2)
"""
from __future__ import annotations

from typing import Iterable, Sequence


class SuffixAutomaton:
    """States are indices: ``next[s]`` token -> state, ``link[s]`` suffix link, ``length[s]`` its longest
    string, ``count[s]`` occurrences of its strings, ``stamp[s]`` when it last occurred (a rising tick).
    State 0 is the root (the empty string; its count is the number of tokens inserted)."""

    def __init__(self) -> None:
        self.next: list[dict[int, int]] = [{}]
        self.link: list[int] = [-1]
        self.length: list[int] = [0]
        self.count: list[int] = [0]
        self.stamp: list[int] = [0]
        self.tick = 0

    def __len__(self) -> int:
        return len(self.length)

    def _new(self, length: int, link: int, nxt: dict[int, int], count: int, stamp: int) -> int:
        self.next.append(nxt)
        self.link.append(link)
        self.length.append(length)
        self.count.append(count)
        self.stamp.append(stamp)
        return len(self.length) - 1

    def _clone(self, p: int, q: int, token: int) -> int:
        """Split state ``q`` so that the strings up to ``length[p] + 1`` long get a state of their own; the
        clone starts with ``q``'s count (the same occurrences so far)."""
        clone = self._new(self.length[p] + 1, self.link[q], dict(self.next[q]), self.count[q], self.stamp[q])
        while p != -1 and self.next[p].get(token) == q:
            self.next[p][token] = clone
            p = self.link[p]
        self.link[q] = clone
        return clone

    def extend(self, end: int, token: int) -> int:
        """Append ``token`` to the sequence whose whole text so far lies in state ``end`` (0 for a new
        sequence); returns the state of the extended sequence."""
        nxt, length = self.next, self.length
        q = nxt[end].get(token)
        if q is not None:  # the extended text already occurs (another sequence): reuse or split its state
            cur = q if length[q] == length[end] + 1 else self._clone(end, q, token)
        else:
            cur = self._new(length[end] + 1, 0, {}, 0, 0)
            p = end
            while p != -1 and token not in nxt[p]:
                nxt[p][token] = cur
                p = self.link[p]
            if p != -1:
                q = nxt[p][token]
                self.link[cur] = q if length[p] + 1 == length[q] else self._clone(p, q, token)
        # every suffix of the extended text occurs once more: the states on the suffix-link path of ``cur``
        self.tick += 1
        s = cur
        count, stamp, link, tick = self.count, self.stamp, self.link, self.tick
        while s != -1:
            count[s] += 1
            stamp[s] = tick
            s = link[s]
        return cur

    def extend_all(self, end: int, tokens: Iterable[int]) -> int:
        for t in tokens:
            end = self.extend(end, int(t))
        return end

    def walk(self, tokens: Sequence[int]) -> int:
        """The state of ``tokens`` (a substring), or -1 if it does not occur."""
        s = 0
        for t in tokens:
            s = self.next[s].get(t, -1)
            if s < 0:
                return -1
        return s

    def count_of(self, tokens: Sequence[int]) -> int:
        """How many times ``tokens`` occurs in the sequences (0 if never)."""
        s = self.walk(tokens)
        return 0 if s < 0 else self.count[s]

    def match(self, pattern: Sequence[int]) -> tuple[int, int]:
        """(state, m): ``pattern[-m:]`` is the longest suffix of ``pattern`` that occurs, and lies in ``state``
        (``length[link[state]] < m <= length[state]``); (0, 0) if not even its last token occurs."""
        nxt, link, length = self.next, self.link, self.length
        s, m = 0, 0
        for t in pattern:
            while s and t not in nxt[s]:
                s = link[s]
                m = length[s]
            s2 = nxt[s].get(t)
            if s2 is None:
                s, m = 0, 0
            else:
                s, m = s2, m + 1
        return s, m

    def shorten(self, state: int, m: int) -> int:
        """The state of the suffix of length ``m`` of a string in ``state`` (``m`` at most its length)."""
        link, length = self.link, self.length
        while length[link[state]] >= m:
            state = link[state]
        return state
