"""The host's speed at model-free drafting: a small fixed CPU micro-benchmark of what such drafters do.

PLD, REST, suffix, lookahead's pool and the other drafters without a model of their own spend their seconds in
the interpreter, small numpy calls and Python containers on one core, whatever the accelerator. A device profile
keeps the seconds this benchmark takes on its machine (``host_s``); a projection prices a run's recorded
model-free drafting seconds on another machine by the ratio of the two machines' figures
(``specbench/reports/projection_costs.py``): a host twice as fast at this benchmark drafts PLD in half the time.

The work is fixed (seeded tokens, fixed sizes), so the figure compares machines and nothing else: a lookup of
the last n-gram's earlier match (numpy comparisons over a 1024-token context, as prompt lookup does) at 64
positions, and an n-gram index in a dict built and queried over the same tokens (as the suffix and retrieval
drafters' tries are). Median of ``repeats`` rounds; a round takes a few milliseconds.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

CONTEXT = 1024
VOCAB = 48  # few distinct tokens: most n-grams recur, so lookups find matches as on real text
LOOKUPS = 64
NGRAM = 3


def _lookup(tokens: np.ndarray, n: int) -> int:
    """Start of the earliest earlier occurrence of the last ``n`` tokens (-1: none)."""
    span = len(tokens) - n
    hit = tokens[:span] == tokens[span]
    for i in range(1, n):
        hit &= tokens[i: span + i] == tokens[span + i]
    idx = np.flatnonzero(hit)
    return int(idx[0]) if idx.size else -1


def _index(tokens: list[int]) -> int:
    """Build an n-gram -> next tokens dict over ``tokens`` and query every n-gram once; the entries found."""
    table: dict[tuple[int, ...], list[int]] = {}
    for i in range(len(tokens) - NGRAM):
        table.setdefault(tuple(tokens[i: i + NGRAM]), []).append(tokens[i + NGRAM])
    return sum(len(table.get(tuple(tokens[i: i + NGRAM]), ())) for i in range(len(tokens) - NGRAM))


def one_round(tokens: np.ndarray) -> float:
    """Seconds of one round of the fixed work."""
    as_list = tokens.tolist()
    start = time.perf_counter()
    for end in range(CONTEXT - LOOKUPS, CONTEXT):
        for n in (NGRAM, 2, 1):
            if _lookup(tokens[:end], n) >= 0:
                break
    _index(as_list)
    return time.perf_counter() - start


def measure_host_seconds(repeats: int = 21) -> float:
    """The median seconds of ``repeats`` rounds (after one warm-up round) on this machine."""
    return statistics.median(host_rounds(repeats))


def host_rounds(repeats: int = 21) -> list[float]:
    """The seconds of each of ``repeats`` rounds (after one warm-up round) on this machine."""
    tokens = np.random.default_rng(0).integers(0, VOCAB, CONTEXT).astype(np.int64)
    one_round(tokens)
    return [one_round(tokens) for _ in range(repeats)]
