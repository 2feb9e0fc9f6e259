"""The shapes the compiled backend runs: rows padded to a bucket, caches of a power-of-two capacity.

A forward of ``n`` rows runs as the smallest bucket holding them (``row_bucket``); a prompt longer than the
largest bucket is prefilled in chunks of it (``chunks``). A generation's KV cache holds a power of two positions
(``capacity_bucket``), so one compiled graph serves every prompt of a task. Each (bucket, capacity) pair is one
compiled graph: with the default buckets and one capacity, 7 graphs.

>>> row_bucket(1), row_bucket(9), row_bucket(64), row_bucket(100)
(1, 16, 64, 128)
>>> chunks(150, (1, 2, 4, 64))
[(0, 64), (64, 128), (128, 150)]
>>> capacity_bucket(300), capacity_bucket(1025)
(512, 2048)
>>> parse_buckets("1,4,16")
(1, 4, 16)
>>> parse_buckets("4,x")
Traceback (most recent call last):
...
specbench.errors.ConfigError: SPECBENCH_COMPILE_BUCKETS: comma-separated row counts >= 1, got '4,x'
"""
from __future__ import annotations

from specbench.errors import ConfigError

ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64)  # the buckets: a step verifies 1..~64 rows
MIN_CAPACITY = 512  # the smallest cache: every short prompt, its answer and a draft share one graph


def parse_buckets(text: str) -> tuple[int, ...]:
    """Sorted row buckets from ``"1,2,4"``; a one-line ``ConfigError`` otherwise."""
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        sizes = []
    if not sizes or sizes[0] < 1:
        raise ConfigError(f"SPECBENCH_COMPILE_BUCKETS: comma-separated row counts >= 1, got {text!r}")
    return tuple(sizes)


def row_bucket(n: int, buckets: tuple[int, ...] = ROW_BUCKETS) -> int:
    """The smallest bucket holding ``n`` rows; past the largest, the largest doubled until it holds them (a tree
    wider than every bucket: a shape of its own, compiled on first use; a chain runs in ``chunks`` instead)."""
    for size in buckets:
        if n <= size:
            return size
    size = buckets[-1]
    while size < n:
        size *= 2
    return size


def chunks(n: int, buckets: tuple[int, ...] = ROW_BUCKETS) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of ``n`` rows, each at most the largest bucket (a long prompt's prefill)."""
    step = buckets[-1]
    return [(start, min(n, start + step)) for start in range(0, n, step)]


def capacity_bucket(positions: int, minimum: int = MIN_CAPACITY) -> int:
    """The power of two (at least ``minimum``) holding ``positions`` cache positions."""
    capacity = minimum
    while capacity < positions:
        capacity *= 2
    return capacity
