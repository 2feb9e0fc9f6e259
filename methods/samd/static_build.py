"""Building the static suffix automaton of a corpus with numpy, from a suffix array (no Python loop per token).

The classic online construction is a Python loop per token (minutes per million tokens and a dict per
state). Instead we use the correspondence between the automaton of ``T`` and the suffix tree of the
reversed text ``R = T[::-1]``: a suffix of ``R`` starting at ``p`` is the prefix of ``T`` ending at
``n - 1 - p``, so the set of end positions of a substring of ``T`` is an interval of ``R``'s suffix
array, and

- the automaton's states are the suffix tree's nodes: the root, every lcp-interval ``[a, b]`` of
  depth ``h > 0`` (suffixes ``a..b`` share exactly ``h`` tokens), and a leaf per suffix that is not a
  prefix of another suffix;
- a state's ``length`` is the node's depth, its suffix ``link`` the parent node, its count of end
  positions the interval's size, and its first end ``n - 1 - max(SA[a..b])``;
- the transition of a node on token ``c`` goes to the node whose interval is the LF-image of the
  node's suffixes preceded by ``c`` (``c`` = the token that follows the prefix in ``T``).

Every step is a vectorised pass (nearest-smaller-values by pointer jumping, range maxima by a
sparse-table sweep, transitions by walking all leaves up the tree in parallel); each transition is
emitted once, from the first suffix of its node preceded by its token.

Worked example, ``T = a b a`` (``R = a b a``, ``SA = [2, 0, 1]``: "a", "aba", "ba"; lcp between
neighbours 1 and 0): one lcp-interval ``[0, 1]`` of depth 1 (the state of "a", 2 end positions, first
end 0), leaves 1 ("aba", depth 3) and 2 ("ba" read backwards: "ab", depth 2, first end 1), and the
root; the transition of "a" on ``b`` goes to "ab" (see ``dyn_sam.py`` for the same automaton built
online).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from specbench_methods.samd.sam_edges import Intervals, transitions

@dataclass
class SAMArrays:
    """The automaton as flat arrays (state 0 = the empty string).

    ``edge_off[s]:edge_off[s + 1]`` are state ``s``'s transitions, sorted by token."""

    length: np.ndarray  # [S] longest string of each state
    link: np.ndarray  # [S] suffix link (-1 for the root)
    count: np.ndarray  # [S] number of end positions
    first_end: np.ndarray  # [S] 0-based end of the first occurrence (-1 for the root)
    edge_off: np.ndarray  # [S + 1]
    edge_tok: np.ndarray  # [E] int32
    edge_dst: np.ndarray  # [E]

    @property
    def n_states(self) -> int:
        return len(self.length)

    @property
    def n_edges(self) -> int:
        return len(self.edge_tok)


def _index_dtype(limit: int) -> type:
    return np.int32 if limit < 2**31 - 1 else np.int64


def nearest_smaller_left(h: np.ndarray) -> np.ndarray:
    """``out[i]`` = the largest ``j < i`` with ``h[j] < h[i]``, for i >= 1, or 0 when there is none
    (``h[0]`` is meant as a sentinel below the other values). Pointer jumping: each candidate jumps to its candidate's candidate.

    >>> nearest_smaller_left(np.array([-1, 3, 1, 4, 4, 2])).tolist()[1:]
    [0, 0, 2, 2, 2]
    """
    n = len(h)
    cand = np.arange(-1, n - 1, dtype=_index_dtype(n))
    cand[0] = 0
    active = np.arange(1, n, dtype=cand.dtype)
    while active.size:
        # invariant: every value strictly between cand[i] and i is >= h[i]
        c = cand[active]
        active = active[(h[c] >= h[active]) & (c > 0)]
        cand[active] = cand[cand[active]]
    return cand


def range_max(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``max(x[lo[i]..hi[i]])`` (inclusive, ``lo <= hi``) for every query, by a sparse-table sweep that
    keeps one level of the table at a time.

    >>> range_max(np.array([5, 1, 7, 2, 9, 3]), np.array([0, 1, 3]), np.array([1, 3, 5])).tolist()
    [5, 7, 9]
    """
    out = np.empty(len(lo), dtype=x.dtype)
    if not len(lo):
        return out
    level = np.floor(np.log2((hi - lo + 1).astype(np.float64))).astype(np.int64)
    order = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[order], np.arange(int(level.max()) + 2))
    table = np.array(x, copy=True)  # table[j] = max(x[j .. j + 2^k - 1]) at level k
    for k in range(int(level.max()) + 1):
        sel = order[bounds[k] : bounds[k + 1]]
        if sel.size:
            out[sel] = np.maximum(table[lo[sel]], table[hi[sel] - (1 << k) + 1])
        w = 1 << k
        if w < len(table):
            np.maximum(table[:-w], table[w:], out=table[:-w])
    return out


# share of the build's time spent before each stage ends (measured on a 28M-token corpus), for the progress bar
STAGES = {"suffix array": 0.08, "lcp intervals": 0.33, "states": 0.40, "transitions": 1.0}


def build_sam_arrays(tokens: np.ndarray, vocab_size: int, progress: Callable[[str, float], None] | None = None) -> SAMArrays:
    """The suffix automaton of ``tokens`` (int ids in ``[0, vocab_size)``) as ``SAMArrays``;
    ``progress(stage, fraction done)`` is called after each stage of ``STAGES``."""
    from pydivsufsort import divsufsort, kasai

    done = progress or (lambda stage, fraction: None)

    T = np.ascontiguousarray(tokens, dtype=np.int32)
    n = len(T)
    if n == 0:
        z = np.zeros(0, dtype=np.int32)
        return SAMArrays(np.zeros(1, np.int32), np.full(1, -1, np.int32), np.zeros(1, np.int32),
                         np.full(1, -1, np.int32), np.zeros(2, np.int32), z, z)
    R = np.ascontiguousarray(T[::-1])
    ix = _index_dtype(2 * n + 2)
    sa = divsufsort(R).astype(ix, copy=False)  # [n] suffix starts of R in lexicographic order
    lcp = np.empty(n + 1, dtype=ix)  # lcp[i] = common prefix of suffixes i-1 and i; sentinels at 0 and n
    lcp[0] = lcp[n] = -1
    lcp[1:n] = kasai(R, sa)[: n - 1]
    isa = np.empty(n, dtype=ix)
    isa[sa] = np.arange(n, dtype=ix)
    done("suffix array", STAGES["suffix array"])

    # internal nodes: the lcp-interval of every position with lcp > 0, deduplicated by (a, b)
    left = nearest_smaller_left(lcp)  # a = left[i]
    right = n - nearest_smaller_left(lcp[::-1].copy())[::-1]  # b + 1 = right[i]
    pos = np.flatnonzero(lcp[1:n] > 0).astype(ix) + 1
    keys = left[pos].astype(np.int64) * (n + 1) + (right[pos] - 1)
    node_keys, first_pos, node_index = np.unique(keys, return_index=True, return_inverse=True)
    del keys
    m = len(node_keys)
    node_of_lcp = np.zeros(n + 1, dtype=ix)  # lcp position -> its node (0 = the root, for lcp <= 0)
    node_of_lcp[pos] = 1 + node_index.astype(ix).reshape(-1)
    node_a = (node_keys // (n + 1)).astype(ix)
    node_b = (node_keys % (n + 1)).astype(ix)
    node_h = lcp[pos[first_pos]]
    del node_index, first_pos, left, right
    done("lcp intervals", STAGES["lcp intervals"])

    # leaves: suffixes that are not a prefix of the next one; the others end at the node of lcp[k + 1]
    depth = (n - sa).astype(ix)  # [n] length of each suffix
    is_leaf = depth > lcp[1:]
    leaves = np.flatnonzero(is_leaf).astype(ix)
    S = 1 + m + len(leaves)
    start = node_of_lcp[1:].copy()  # [n] the deepest state holding suffix k
    start[leaves] = 1 + m + np.arange(len(leaves), dtype=ix)

    def parent_by_bounds(lo_pos: np.ndarray, hi_pos: np.ndarray) -> np.ndarray:
        return node_of_lcp[np.where(lcp[lo_pos] >= lcp[hi_pos], lo_pos, hi_pos)]

    length = np.concatenate([[0], node_h, depth[leaves]]).astype(ix)
    link = np.concatenate([[-1], parent_by_bounds(node_a, node_b + 1), parent_by_bounds(leaves, leaves + 1)]).astype(ix)
    count = np.concatenate([[n], node_b - node_a + 1, np.ones(len(leaves), dtype=ix)]).astype(ix)
    first_end = np.concatenate([[-1], n - 1 - range_max(sa, node_a, node_b), n - 1 - sa[leaves]]).astype(ix)
    lo_of = np.concatenate([[0], node_a, leaves]).astype(ix)  # each state's suffix-array interval
    hi_of = np.concatenate([[n - 1], node_b, leaves]).astype(ix)
    del pos, node_a, node_b, node_h, depth, node_keys, lcp, node_of_lcp
    done("states", STAGES["states"])

    node_a = lo_of[1 : m + 1]
    first_node_at = np.searchsorted(node_a, np.arange(n + 1, dtype=ix)).astype(ix)  # nodes by left end
    ends = Intervals(lo_of, hi_of, first_node_at, np.where(is_leaf, start, -1))
    src, tok, dst = transitions(R, sa, isa, start, link, ends, vocab_size)
    edge_off = np.searchsorted(src, np.arange(S + 1, dtype=ix)).astype(_index_dtype(len(src) + 1))
    done("transitions", STAGES["transitions"])
    return SAMArrays(length, link, count, first_end, edge_off, tok, dst)
