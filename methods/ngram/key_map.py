"""llama.cpp's n-gram map in key-only mode (``common_ngram_map`` with ``key_only``: ``--spec-type ngram-map-k``).

State kept across requests, as one server slot keeps it: the keys drafted from (each with what its last draft
accepted), and a table from n-gram hash to a start where that n-gram occurs. ``begin(prompt length)`` at each
request, ``draft(text)`` at each step (``text`` = history + root), ``accept(n)`` after a step that verified a
draft. Every quirk of llama.cpp's search is kept (``README.md``): the table keeps the first start written into a
bucket (collisions included) and is searched first, then the starts not yet in the table, descending.

Example (``size_n=2, size_m=3``): a prompt of 8 tokens; the key ``[5, 6]`` (the last history token and the
root) occurred at 1, followed by ``[7, 8, 9]``; a new key drafts ``size_m`` tokens. After that draft accepted
one token, the same key drafts one.

>>> km = KeyMap(2, 3)
>>> km.begin(8)
>>> km.draft(np.array([4, 5, 6, 7, 8, 9, 1, 2, 5, 6]))
[7, 8, 9]
>>> km.accept(1)
>>> km.draft(np.array([4, 5, 6, 7, 8, 9, 1, 2, 5, 6, 3, 5, 6]))
[7]
"""
from __future__ import annotations

import numpy as np

HASH_SIZE = 1 << 18  # llama.cpp's COMMON_NGRAM_HASH_MAP_SIZE
LCG = 2654435761  # llama.cpp's LCG_FACTOR
MASK = 0xFFFFFFFF  # the hash is a uint32


def bucket_of(tokens: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    """The table bucket of the n-gram at each start: llama.cpp's hash ``h = h * LCG + token`` in uint32."""
    h = np.zeros(len(starts), dtype=np.uint64)
    for k in range(n):
        h = (h * np.uint64(LCG) + tokens[starts + k].astype(np.uint64)) & np.uint64(MASK)
    return (h % np.uint64(HASH_SIZE)).astype(np.int64)


def latest_start(text: np.ndarray, key: np.ndarray, hi: int, lo: int) -> int:
    """The largest start j with ``lo < j <= hi`` where ``key`` occurs in ``text``, else 0 (llama.cpp's scans)."""
    if hi <= lo:
        return 0
    starts = np.arange(lo + 1, hi + 1)
    for k in range(len(key)):
        starts = starts[text[starts + k] == key[k]]
        if starts.size == 0:
            return 0
    return int(starts[-1])


class KeyMap:
    """One slot's ``common_ngram_map`` in key-only mode (its ``values[0].n_accepted`` per key, the hash table)."""

    def __init__(self, size_n: int, size_m: int) -> None:
        self.n, self.m = size_n, size_m
        self.key_starts: list[int] = []  # keys[i].key_idx
        self.key_accepted: list[int] = []  # keys[i].values[0].n_accepted (size_m for a new key)
        self.table: dict[int, int] = {}  # bucket -> start (llama.cpp's key_map, 0 = empty)
        self.table_last = 0  # key_map_last_idx: starts above it are not in the table yet
        self.size_last_begin = 0
        self.idx_last_check = 0
        self.last_key: int | None = None  # the key of the last draft (last_draft_created / last_draft_key_idx)

    def begin(self, size_begin: int) -> None:
        """``common_ngram_map_begin``: a request whose prompt is shorter than what was seen drops what lies
        beyond it (table entries and keys at or past the cleanup index)."""
        n, m = self.n, self.m
        cleanup = self.size_last_begin
        if cleanup > size_begin:
            cleanup = size_begin - n - m if size_begin > n + m else 0
        if size_begin < self.idx_last_check:
            self.table = {b: j for b, j in self.table.items() if j < cleanup}
            self.table_last = cleanup - 1 if cleanup > 0 else 0
            self._drop_keys(cleanup)
        self.idx_last_check = self.size_last_begin = size_begin

    def _drop_keys(self, cleanup: int) -> None:
        """The keys starting at or past ``cleanup`` go (with what they accepted)."""
        kept = [i for i, j in enumerate(self.key_starts) if j < cleanup]
        self.key_starts = [self.key_starts[i] for i in kept]
        self.key_accepted = [self.key_accepted[i] for i in kept]

    def _fill(self, text: np.ndarray, hi: int, lo: int) -> None:
        """Table entries for the starts ``hi`` down to ``lo + 1``, each only into an empty bucket."""
        if hi > lo:
            starts = np.arange(hi, lo, -1)
            for b, j in zip(bucket_of(text, starts, self.n).tolist(), starts.tolist()):
                self.table.setdefault(b, j)

    def draft(self, text: np.ndarray) -> list[int]:
        """``common_ngram_map_draft`` (key-only) of ``text`` = history + root: ``[]`` for none."""
        self.last_key = None
        match = self.find(text)
        return self._draft_from(text, match, self.key_offset(text, match)) if match else []

    def _draft_from(self, text: np.ndarray, match: int, offset: int) -> list[int]:
        """Key-only mode: the tokens after ``match``, at most what the key's last draft accepted."""
        self.last_key = offset
        count = min(self.m, self.key_accepted[offset])
        return text[match + self.n : match + self.n + count].tolist()

    def find(self, text: np.ndarray) -> int:
        """The start of the key's occurrence llama.cpp's search finds (0 for none), the table updated as it is."""
        n, m = self.n, self.m
        cur_len = len(text) - 1
        if cur_len < 2 * n + m:
            return 0
        self.idx_last_check = cur_len
        key = text[cur_len - n + 1 :]
        top = cur_len - n - m - 1  # the latest start with size_m tokens after the key, before the root
        match = 0
        j = self.table.get(int(bucket_of(key, np.zeros(1, dtype=np.int64), n)[0]), 0)
        if j != 0 and j < top and np.array_equal(text[j : j + n], key):
            match = j
        begin = self.size_last_begin
        if match == 0 and begin > n + m + 1:
            match = latest_start(text, key, begin - n - m - 1, self.table_last)
        if match == 0:
            match = latest_start(text, key, top, max(begin, self.table_last))
        if begin > n + m + 1:
            self._fill(text, begin - n - m - 1, self.table_last)
        self._fill(text, top, max(begin, self.table_last))
        self.table_last = max(top, self.table_last)
        return match

    def key_offset(self, text: np.ndarray, match: int) -> int:
        """The first key whose start in ``text`` holds the key (llama.cpp compares the text there), else a new
        one starting at ``match``."""
        key = text[len(text) - self.n :]
        offset = self._offset_of(text, key)
        if offset == len(self.key_starts):
            self._new_key(match)
        return offset

    def _new_key(self, match: int) -> None:
        self.key_starts.append(match)
        self.key_accepted.append(self.m)

    def _offset_of(self, text: np.ndarray, key: np.ndarray) -> int:
        if not self.key_starts:
            return 0
        starts = np.asarray(self.key_starts)
        idx = starts[:, None] + np.arange(self.n)
        ok = idx[:, -1] < len(text)
        same = np.zeros(len(starts), dtype=bool)
        same[ok] = (text[idx[ok]] == key).all(axis=1)
        hits = np.flatnonzero(same)
        return int(hits[0]) if hits.size else len(starts)

    def accept(self, n_accepted: int) -> None:
        """``common_ngram_map_accept``: the last draft's key drafts at most ``n_accepted`` tokens next time."""
        if self.last_key is not None:
            self.key_accepted[self.last_key] = n_accepted
