"""The dynamic suffix automaton: prompt + generated text, extended token by token (amortised O(1) each).

A suffix automaton (SAM) of a text has one state per class of substrings that end at the same set of
positions; ``length`` is the longest string of a state, ``link`` the state of its longest suffix in
another class, ``first_end`` where the state's strings first end (0-based index of their last token).
SAM-Decoding keeps, next to the automaton, the **match**: the state and length of the longest suffix of
the text that also occurs earlier in it, so that each step's lookup of the root costs one transition.

Worked example, text ``a b a`` (tokens 1 2 1):

    state  length  link  first_end  strings   transitions
    0      0       -1    -1         ""        1->1, 2->2
    1      1        0     0         "a"       2->2
    2      2        0     1         "ab" "b"  1->3
    3      3        1     2         "aba"     -

Looking up the root ``b`` (2) after ``a b a``: the match is "a" (state 1, length 1), which has a
transition on 2, so the longest match is "ab" (length 2, state 2) whose first end is position 1: the
draft continues with the tokens after position 1, i.e. ``a`` (and nothing more: the text ends there).
"""
from __future__ import annotations


class DynamicSAM:
    """The automaton of a growing token list, plus the match state of its end (see the module docstring)."""

    def __init__(self) -> None:
        self.next: list[dict[int, int]] = [{}]
        self.link: list[int] = [-1]
        self.length: list[int] = [0]
        self.first_end: list[int] = [-1]
        self.tokens: list[int] = []
        self.last = 0  # the state of the whole text
        self.match_state = 0  # the longest suffix of the text that occurs earlier in it ...
        self.match_len = 0  # ... and its length

    def __len__(self) -> int:
        return len(self.tokens)

    def transfer(self, state: int, length: int, token: int) -> tuple[int, int]:
        """The match after ``token``: follow suffix links until a state has a transition on it.

        >>> sam = DynamicSAM(); sam.extend_all([1, 2, 1])
        >>> sam.transfer(sam.match_state, sam.match_len, 2)
        (2, 2)
        """
        nxt, link, lens = self.next, self.link, self.length
        while state != 0 and token not in nxt[state]:
            state = link[state]
            length = lens[state]
        target = nxt[state].get(token)
        if target is None:
            return 0, 0
        return target, length + 1

    def extend(self, token: int) -> None:
        """Append ``token``: first move the match over it (against the text before it), then grow the
        automaton (the classic online construction; a state is cloned when a transition would skip lengths)."""
        self.match_state, self.match_len = self.transfer(self.match_state, self.match_len, token)
        nxt, link, lens, first = self.next, self.link, self.length, self.first_end
        end = len(self.tokens)
        self.tokens.append(token)
        cur = len(lens)
        nxt.append({})
        link.append(0)
        lens.append(lens[self.last] + 1)
        first.append(end)
        p = self.last
        while p != -1 and token not in nxt[p]:
            nxt[p][token] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][token]
            if lens[p] + 1 == lens[q]:
                link[cur] = q
            else:
                clone = len(lens)
                nxt.append(dict(nxt[q]))
                link.append(link[q])
                lens.append(lens[p] + 1)
                first.append(first[q])  # the clone's strings first end where q's do
                while p != -1 and nxt[p].get(token) == q:
                    nxt[p][token] = clone
                    p = link[p]
                link[q] = link[cur] = clone
                if self.match_state == q and self.match_len <= lens[clone]:
                    self.match_state = clone  # the match's strings moved to the clone
        self.last = cur

    def extend_all(self, tokens: list[int]) -> None:
        for t in tokens:
            self.extend(int(t))

    def lookup(self, root: int) -> tuple[int, int]:
        """(state, length) of the longest suffix of text + ``root`` that occurs in the text (nothing is added)."""
        return self.transfer(self.match_state, self.match_len, root)

    def continuation(self, state: int, n: int) -> list[int]:
        """Up to ``n`` tokens after the first occurrence of ``state``'s strings (empty for the root state)."""
        if state == 0 or n <= 0:
            return []
        start = self.first_end[state] + 1
        return self.tokens[start : start + n]

    def widen(self, state: int, n: int) -> int:
        """The reference's ``to_anc``: while fewer than ``n`` tokens follow the state's first occurrence,
        step to its suffix link (a shorter match that first occurred earlier), never to the empty state.

        >>> sam = DynamicSAM(); sam.extend_all([2, 8, 8, 8, 1, 2, 3, 1])
        >>> s, _ = sam.lookup(2); sam.first_end[s], sam.first_end[sam.widen(s, 3)]  # "1 2" at 5, "2" at 0
        (5, 0)
        """
        if state == 0:
            return 0
        total = len(self.tokens)
        while self.link[state] != 0 and n > total - 1 - self.first_end[state]:
            state = self.link[state]
        return state
