"""llama.cpp's n-gram map with values (``common_ngram_map`` without ``key_only``: ``--spec-type ngram-map-k4v``).

The key's occurrence is found as in key-only mode (``KeyMap.find``: the hash table, then the scans); then the
key's statistics are brought up to date: every start from the key's last statistics index up to the match where
the key occurs counts the ``size_m`` tokens after it as one of at most four values (a fifth different value is
not counted). The key drafts only once it was found ``min_hits`` times, and only when its most frequent value
occurs at least twice as often as the other values together. Then, as llama.cpp does, the tokens drafted are
those after the *match* (not after the most frequent value's start), at most what that value's last draft
accepted.

Example (``size_n=1, size_m=2``): the key ``[5]`` occurred at 1 (followed by 6 7) and at 4 (followed by 6 7
too): the statistics scan counts both starts up to the match (4), one value seen twice: the draft is ``[6, 7]``.
With two occurrences followed by different values (6 7, then 8 9), 1 against 1 is less than twice: no draft.

>>> vm = ValueMap(1, 2, min_hits=1)
>>> vm.draft(np.array([0, 5, 6, 7, 5, 6, 7, 0, 5]))
[6, 7]
>>> ValueMap(1, 2, min_hits=1).draft(np.array([0, 5, 6, 7, 5, 8, 9, 0, 5]))
[]
"""
from __future__ import annotations

import numpy as np

from specbench_methods.ngram.key_map import KeyMap

MAX_VALUES = 4  # COMMON_NGRAM_MAX_VALUES
MAX_COUNT = 16380  # COMMON_NGRAM_MAX_VALUE_COUNT: counts saturate there


class KeyStats:
    """One key's ``common_ngram_map_key`` beyond its start: its hits, where its statistics stop, its values."""

    def __init__(self, size_m: int) -> None:
        self.num = 0  # key_num: how often a lookup found this key
        self.stat_idx = 0  # the statistics cover starts up to here
        # values[v] = [value_idx (0: unused), value_num, n_accepted]
        self.values = [[0, 0, size_m] for _ in range(MAX_VALUES)]

    def drop_from(self, cleanup: int) -> None:
        """``common_ngram_map_begin``'s value cleanup: values starting at or past ``cleanup`` go, the later
        ones move left, the last slot is emptied (its ``n_accepted`` kept, as llama.cpp leaves it)."""
        for j in range(MAX_VALUES - 1, -1, -1):
            if self.values[j][0] != 0 and self.values[j][0] >= cleanup:
                last = self.values[-1]
                self.values[j:] = self.values[j + 1 :] + [[0, 0, last[2]]]


class ValueMap(KeyMap):
    """One slot's ``common_ngram_map`` with values (``key_only`` false), ``min_hits`` as llama.cpp's."""

    def __init__(self, size_n: int, size_m: int, min_hits: int) -> None:
        super().__init__(size_n, size_m)
        self.min_hits = min_hits
        self.key_stats: list[KeyStats] = []
        self.last_value = 0

    def _new_key(self, match: int) -> None:
        super()._new_key(match)
        self.key_stats.append(KeyStats(self.m))

    def _drop_keys(self, cleanup: int) -> None:
        kept = []
        for i, start in enumerate(self.key_starts):
            if start >= cleanup:
                continue
            self.key_stats[i].drop_from(cleanup)
            if self.key_stats[i].values[0][0] != 0:  # a key without values goes too
                kept.append(i)
        self.key_starts = [self.key_starts[i] for i in kept]
        self.key_accepted = [self.key_accepted[i] for i in kept]
        self.key_stats = [self.key_stats[i] for i in kept]

    def _draft_from(self, text: np.ndarray, match: int, offset: int) -> list[int]:
        """With values: the key's hits, then its values' statistics decide whether the tokens after ``match``
        are drafted."""
        stats = self.key_stats[offset]
        stats.num = min(stats.num + 1, MAX_COUNT)
        if stats.num < self.min_hits:
            return []
        self._count_values(text, stats, match)
        counts = [v[1] for v in stats.values]
        best = counts.index(max(counts))  # the first slot with the most occurrences
        others = sum(counts) - counts[best]
        if others > 0 and counts[best] < 2 * others:  # not clearly the most frequent continuation
            return []
        self.last_key, self.last_value = offset, best
        count = min(self.m, stats.values[best][2])
        return text[match + self.n : match + self.n + count].tolist()  # after the match, as llama.cpp drafts

    def _count_values(self, text: np.ndarray, stats: KeyStats, match: int) -> None:
        """Count the value after each start from ``stat_idx`` to ``match`` (both included) where the key occurs."""
        n, m = self.n, self.m
        key = text[len(text) - n :]
        starts = np.arange(stats.stat_idx, match + 1)
        for k in range(n):
            starts = starts[text[starts + k] == key[k]]
        for i in starts.tolist():
            for value in stats.values:
                if value[0] == 0:  # an empty slot: a new value
                    value[:] = [i + n, 0, m]
                elif not np.array_equal(text[i + n : i + n + m], text[value[0] : value[0] + m]):
                    continue
                value[1] = min(value[1] + 1, MAX_COUNT)
                break
        stats.stat_idx = match

    def accept(self, n_accepted: int) -> None:
        """``common_ngram_map_accept``: the value drafted from drafts at most ``n_accepted`` tokens next time."""
        if self.last_key is not None:
            self.key_stats[self.last_key].values[self.last_value][2] = n_accepted
