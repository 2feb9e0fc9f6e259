"""REST draft selection (Algorithm 2 of the REST paper): top-c trie nodes by count (dict or numpy).

Every retrieved continuation is inserted into a trie whose nodes count how many continuations share
that prefix; the ``c`` nodes with the largest counts form the draft tree. Ties are broken
deterministically by first occurrence: the node first created when inserting the rows in retrieval
order wins (earlier row, then shallower node). A parent's count is >= its child's and it is created
no later, so the top-c set is prefix-closed; ancestors are still added defensively.

Example: continuations ``[[1, 2], [1, 3], [1, 2], [4, -1]]`` (``-1`` pads past the chunk end) give
counts ``1:3, 1>2:2, 1>3:1, 4:1``. With c = 3 the tie between ``1>3`` (first seen in row 1) and ``4``
(row 3) goes to ``1>3``: tokens ``(1, 2, 3)``, parents ``(-1, 0, 0)``.

``cut_to_choices`` then applies the REST reference retriever's pruning (see its docstring).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from specbench.engine.tree import DraftTree


def _first_diff(rows: np.ndarray) -> np.ndarray:
    """[n] first column where row i differs from row i-1 (-1 for row 0, m when equal)."""
    n, m = rows.shape
    diff = rows[1:] != rows[:-1]  # [n-1, m]
    arg = diff.argmax(axis=1)
    first = np.where(diff[np.arange(n - 1), arg], arg, m)
    return np.concatenate([[-1], first])


def _is_sorted(rows: np.ndarray, first: np.ndarray) -> bool:
    n, m = rows.shape
    i = np.flatnonzero(first[1:] < m) + 1
    return bool(np.all(rows[i, first[i]] > rows[i - 1, first[i]]))


SMALL = 1024  # below this many tokens a plain dict trie beats numpy's per-call overhead


def top_nodes(conts: np.ndarray, c: int) -> DraftTree | None:
    """Draft tree of the ``c`` most frequent prefixes of ``conts`` (int [n, m], rows -1 padded at the end).

    Rows are in retrieval order. Returns ``None`` when there is no continuation token.
    """
    if conts.ndim != 2 or conts.shape[0] == 0 or conts.shape[1] == 0 or c <= 0:
        return None
    if conts.size <= SMALL:
        return top_nodes_dict(conts.tolist(), c)
    return top_nodes_vectorised(conts, c)


def query_tree(ds: Any, query: Sequence[int], k: int, m: int, c: int, cut: bool = True, spread: bool = False) -> DraftTree | None:
    """The REST tree for a fixed query: top-c trie nodes over the continuations of <= k matches.

    ``ds`` is any datastore with ``continuations(query, k, m, spread)`` (a suffix-array ``TokenDatastore``).
    ``cut``: prune the top-c selection with the reference retriever's rule (``cut_to_choices``).
    ``spread``: the k matches spread evenly over all matches instead of the first k (CREST's build).
    """
    conts = ds.continuations(query, k, m, spread=True) if spread else ds.continuations(query, k, m)
    tree = top_nodes(conts, c)
    return cut_to_choices(tree, c) if cut and tree is not None else tree


def cut_to_choices(tree: DraftTree, c: int) -> DraftTree:
    """The reference REST retriever's pruning of a top-c selection, counted its way.

    Every selected node stands for its path from the root; a path "costs" its number of *distinct* token
    ids. While the summed cost of the paths still kept exceeds ``c``, the costliest path is dropped
    (ties: the lowest-ranked node, i.e. the latest in ``tree``, first; the reference's order there comes
    from a hash set). The result is the union of the kept paths with their prefixes, in ``tree``'s order.

    Example, c = 6, nodes in rank order ``1``, ``1>2``, ``1>2>3``, ``1>5``, ``7``: costs 1+2+3+2+1 = 9 > 6,
    so ``1>2>3`` (cost 3) goes and 6 remain: tokens ``(1, 2, 5, 7)``, parents ``(-1, 0, 0, -1)``.
    """
    paths: list[tuple[int, ...]] = []
    for i, p in enumerate(tree.parents):
        paths.append((paths[p] if p >= 0 else ()) + (tree.tokens[i],))
    cost = [len(set(path)) for path in paths]
    total = sum(cost)
    kept = [True] * len(tree)
    for i in sorted(range(len(tree)), key=lambda i: (-cost[i], -i)):
        if total <= c:
            break
        total -= cost[i]
        kept[i] = False
    keep = [False] * len(tree)
    for i in range(len(tree) - 1, -1, -1):  # children follow parents: a kept path keeps its ancestors
        if kept[i] or keep[i]:
            keep[i] = True
            if tree.parents[i] >= 0:
                keep[tree.parents[i]] = True
    new_index = {-1: -1}
    tokens: list[int] = []
    parents: list[int] = []
    for i in range(len(tree)):
        if keep[i]:
            new_index[i] = len(tokens)
            tokens.append(tree.tokens[i])
            parents.append(new_index[tree.parents[i]])
    return DraftTree(tuple(tokens), tuple(parents))


def top_nodes_dict(rows: list[list[int]], c: int) -> DraftTree | None:
    """Algorithm 2 with a dict trie: insert rows in order, rank by (count desc, creation order)."""
    count: dict[tuple[int, int], int] = {}  # (parent node, token) -> count; node id = creation index
    node_of: dict[tuple[int, int], int] = {}
    keys: list[tuple[int, int]] = []
    for row in rows:
        parent = -1
        for tok in row:
            if tok < 0:
                break
            key = (parent, tok)
            node = node_of.get(key)
            if node is None:
                node = node_of[key] = len(keys)
                keys.append(key)
                count[key] = 0
            count[key] += 1
            parent = node
    if not keys:
        return None
    chosen = sorted(range(len(keys)), key=lambda i: (-count[keys[i]], i))[:c]
    out_index: dict[int, int] = {}
    tokens: list[int] = []
    parents: list[int] = []
    for node in chosen:  # parents rank before children, so they are already placed
        parent, tok = keys[node]
        out_index[node] = len(tokens)
        tokens.append(tok)
        parents.append(-1 if parent < 0 else out_index[parent])
    return DraftTree(tuple(tokens), tuple(parents))


def top_nodes_vectorised(conts: np.ndarray, c: int) -> DraftTree | None:
    """The same selection as ``top_nodes_dict``, in numpy (for thousands of continuations)."""
    conts = np.asarray(conts)
    n, m = conts.shape
    # 1. sort rows lexicographically; equal rows keep retrieval order (suffix-array order is sorted already)
    first = _first_diff(conts)
    presorted = _is_sorted(conts, first)
    if presorted:
        order = np.arange(n)
        rows = conts
    else:
        order = np.lexsort([np.arange(n)] + [conts[:, j] for j in range(m - 1, -1, -1)])
        rows = conts[order]
        first = _first_diff(rows)
    # collapse identical rows: weight = multiplicity, occurrence = earliest original row
    uniq = np.flatnonzero(first < m)  # [u]
    weight = np.diff(np.append(uniq, n))  # [u]
    u_occ = uniq if presorted else np.minimum.reduceat(order, uniq)
    rows, first = rows[uniq], first[uniq]
    u = len(uniq)
    # 2. depth-d trie nodes = runs of sorted unique rows sharing their first d tokens. Once c nodes are
    #    known, a run with a smaller count than the c-th best (and all its descendants) cannot be chosen,
    #    so its rows leave the active set: exact, and deep levels touch few rows.
    count_l, occ_l, depth_l, parent_l, token_l = [], [], [], [], []
    base = 0  # candidate index of the first node of the current depth
    active = np.arange(u)  # unique rows still in play (whole runs, in sorted order)
    prev_starts = np.zeros(1, dtype=np.int64)  # kept depth d-1 run starts (depth 0: the root)
    prev_node = np.full(1, -1, dtype=np.int64)  # node id of each kept depth d-1 run (-1 = root)
    threshold = 0
    for d in range(1, m + 1):
        is_start = first[active] < d
        st = np.flatnonzero(is_start)  # [g] run starts, positions in ``active``
        start_rows = active[st]
        tok = rows[start_rows, d - 1]
        cnt = np.add.reduceat(weight[active], st)
        real = tok >= 0  # padding is not a node
        if not real.any():
            break
        node = np.full(len(st), -1, dtype=np.int64)
        node[real] = base + np.arange(int(real.sum()))
        s = start_rows[real]
        count_l.append(cnt[real])
        occ_l.append(np.minimum.reduceat(u_occ[active], st)[real])
        depth_l.append(np.full(len(s), d))
        parent_l.append(prev_node[np.searchsorted(prev_starts, s, side="right") - 1])
        token_l.append(tok[real])
        base += len(s)
        if base >= c:
            all_counts = np.concatenate(count_l)
            threshold = int(np.partition(all_counts, len(all_counts) - c)[len(all_counts) - c])
        keep_run = real & (cnt >= threshold)
        active = active[keep_run[np.cumsum(is_start) - 1]]
        if len(active) == 0:
            break
        prev_starts, prev_node = start_rows[keep_run], node[keep_run]
    if not count_l:
        return None
    count, occ, depth = np.concatenate(count_l), np.concatenate(occ_l), np.concatenate(depth_l)
    parent, token = np.concatenate(parent_l), np.concatenate(token_l)
    # 3. rank by count desc, first occurrence, depth (one int64 key: all three are < n + 1); keep the top c
    key = ((n - count) * (n + 1) + occ) * (m + 1) + depth
    if len(key) > c:
        part = np.argpartition(key, c - 1)[:c]
        chosen = part[np.argsort(key[part])]
    else:
        chosen = np.argsort(key)
    out_index: dict[int, int] = {}
    tokens: list[int] = []
    parents: list[int] = []

    def add(node: int) -> int:
        if node in out_index:
            return out_index[node]
        p = int(parent[node])
        p_out = -1 if p < 0 else add(p)
        out_index[node] = len(tokens)
        tokens.append(int(token[node]))
        parents.append(p_out)
        return out_index[node]

    for node in chosen.tolist():
        add(node)
    return DraftTree(tuple(tokens), tuple(parents))
