"""The transitions of the static automaton, computed from the reversed text's suffix array (``static_build.py``).

A state ``v`` (an interval ``[lo(v), hi(v)]`` of suffixes of ``R``) has a transition on token ``c`` when
some suffix in its interval is preceded by ``c`` in ``R`` (in ``T``: an occurrence of ``v``'s strings is
followed by ``c``). The target is the state whose interval is the LF-image of those suffixes: from
``LF(first)`` to ``LF(last)``, the first and last suffixes of ``v`` preceded by ``c`` (LF is monotone
among suffixes preceded by the same token).

Each (state, token) is found twice, by walking every suffix's ancestors in parallel:
- from the first suffix preceded by ``c``: ancestors that start after the previous such suffix;
- from the last: ancestors that end before the next such suffix.
Sorting both lists by (state, token) pairs them up, and gives the order the automaton stores.

Example: ``T = a b a`` (so ``R = a b a``, suffixes in order "a", "aba", "ba"). The root (all three) has
``a`` before "ba" and ``b`` before "a": the edge on ``a`` goes to the interval of suffixes starting with
"a" and the edge on ``b`` to the one-suffix interval of "ba" (the string "ab" of ``T``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

CHUNK = 1 << 22  # suffixes walked up the tree per batch (bounds the temporary arrays)


@dataclass
class Intervals:
    """Each state's suffix-array interval, and how to find a state from its interval."""

    lo: np.ndarray  # [S]
    hi: np.ndarray  # [S]
    first_node_at: np.ndarray  # [n + 1] index (among internal nodes 1..m) of the first node starting at or after a
    leaf_of: np.ndarray  # [n] the leaf state of a suffix, -1 when the suffix is no leaf

    def state_of(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The state whose interval is ``[lo, hi]``: the suffix's leaf when ``lo == hi``, else the internal
        node starting at ``lo`` whose interval ends at ``hi`` (nodes sharing a left end nest, sorted by end)."""
        out = np.empty(len(lo), dtype=self.lo.dtype)
        single = lo == hi
        out[single] = self.leaf_of[lo[single]]
        multi = np.flatnonzero(~single)
        a, b = self.first_node_at[lo[multi]], self.first_node_at[lo[multi] + 1]
        node_hi = self.hi[1:]  # internal node j is state j + 1
        while True:  # binary search for the first node ending at or after hi, all queries at once
            open_ = a < b
            if not open_.any():
                break
            mid = (a + b) // 2
            go_right = open_ & (node_hi[np.minimum(mid, len(node_hi) - 1)] < hi[multi])
            a = np.where(go_right, mid + 1, a)
            b = np.where(open_ & ~go_right, mid, b)
        found = a < len(node_hi)
        if not found.all() or (node_hi[a] != hi[multi]).any() or (out[single] < 0).any():
            raise AssertionError("suffix automaton build: a transition's target is not a state (bug)")
        out[multi] = a + 1
        return out


def _walk(start: np.ndarray, link: np.ndarray, ok: Callable[..., np.ndarray], ks: np.ndarray, bound: np.ndarray,
          tok: np.ndarray, lf: np.ndarray, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """From ``start[ks]`` up the suffix links while ``ok(state, bound)`` holds: the key ``state * vocab +
    token`` and the LF image of every (state, suffix) met."""
    cur, bound, tok, lf = start[ks], bound[ks], tok[ks], lf[ks]
    keys, lfs = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=lf.dtype)]
    while cur.size:
        keep = ok(cur, bound)
        cur, bound, tok, lf = cur[keep], bound[keep], tok[keep], lf[keep]
        keys.append(cur.astype(np.int64) * vocab + tok)
        lfs.append(lf)
        cur = link[cur]
        alive = cur >= 0
        cur, bound, tok, lf = cur[alive], bound[alive], tok[alive], lf[alive]
    return np.concatenate(keys), np.concatenate(lfs)


def _sorted_walks(valid: np.ndarray, walk: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """All chunks' (key, LF) pairs, sorted by key."""
    parts = [walk(valid[c : c + CHUNK]) for c in range(0, max(len(valid), 1), CHUNK)]
    keys = np.concatenate([p[0] for p in parts])
    lfs = np.concatenate([p[1] for p in parts])
    del parts
    order = np.argsort(keys)
    return keys[order], lfs[order]


def transitions(R: np.ndarray, sa: np.ndarray, isa: np.ndarray, start: np.ndarray, link: np.ndarray,
                ends: Intervals, vocab_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source, token, target) of every transition, sorted by (source, token)."""
    n, ix, vocab = len(sa), sa.dtype, max(vocab_size, int(R.max()) + 1)
    before = np.where(sa > 0, R[np.maximum(sa - 1, 0)], -1)  # [n] token preceding each suffix (-1: none)
    order = np.argsort(before, kind="stable").astype(ix)  # suffixes grouped by that token, in SA order
    grouped = before[order]
    same = grouped[1:] == grouped[:-1]
    del grouped
    prev_same = np.full(n, -1, dtype=ix)
    prev_same[order[1:][same]] = order[:-1][same]
    next_same = np.full(n, n, dtype=ix)
    next_same[order[:-1][same]] = order[1:][same]
    del order, same
    lf = np.where(before >= 0, isa[np.maximum(sa - 1, 0)], -1).astype(ix)  # [n] LF image of each suffix
    valid = np.flatnonzero(before >= 0).astype(ix)
    keys, lo = _sorted_walks(valid, lambda ks: _walk(start, link, lambda s, b: ends.lo[s] > b, ks, prev_same, before, lf, vocab))
    del prev_same
    keys_last, hi = _sorted_walks(valid, lambda ks: _walk(start, link, lambda s, b: ends.hi[s] < b, ks, next_same, before, lf, vocab))
    del next_same, lf, before, valid
    if not np.array_equal(keys, keys_last):
        raise AssertionError("suffix automaton build: first and last walks disagree (bug)")
    del keys_last
    src, tok = (keys // vocab).astype(ix), (keys % vocab).astype(np.int32)
    del keys
    # the root's edge on T[0] (= R[n - 1]) also covers T[0] itself, the one suffix no token precedes
    t0 = int(R[n - 1])
    i0 = int(np.searchsorted(src, 0, side="right"))
    j = int(np.searchsorted(tok[:i0], t0))
    if j < i0 and tok[j] == t0:
        lo[j] = isa[n - 1]
    else:  # T[0] occurs nowhere else: add the edge, to the leaf of that one-token suffix
        src, tok = np.insert(src, j, 0), np.insert(tok, j, t0)
        lo, hi = np.insert(lo, j, isa[n - 1]), np.insert(hi, j, isa[n - 1])
    return src, tok, ends.state_of(lo, hi)
