"""Checks of a plan's question counts against its shards and batch sizes, before any model loads.

Both refuse, in one line, a run whose labels would not describe the work done:

* every shard needs a question: shard 2 of 2 of a 1-question run would time nothing (its runner has no first
  prompt, and ``launch`` would find no folder to merge). The refusal is the same in every shard of the run,
  so ``launch`` (which checks shard 1) refuses before it starts any.
* every batch size needs the questions to fill one batch in every task and shard. Records are labelled by the
  batch size asked for (``Unit.batch``); ``--batch-size 1000 --limit 2`` decodes batches of 2, and labelling
  them B=1000 would put a wrong figure in every table. Clamping to the questions there are was the other
  option, but two sizes (4 and 8, 3 questions) would then both decode B=3 under one label, and a sharded run
  would label each shard's batches differently; so a size no task (or shard) can fill is refused, naming the
  task, its count and the largest size that fits. The last batch of a task whose count the size does not
  divide stays smaller, as in any static batching (and turn 2 of a mixed file batches the questions that
  have one): each of those runs alongside at least one full batch of its label.

>>> check_shards_filled(3, (4, 4))
Traceback (most recent call last):
...
specbench.errors.ConfigError: --shard 4/4: 3 questions cannot fill 4 shards (each shard needs one); run at most 3 shards, or more questions
>>> fewest_in_a_shard(5, 0, (1, 2))
(2, 2)
"""
from __future__ import annotations

from typing import Sequence

from specbench.errors import ConfigError


def _questions(n: int) -> str:
    return f"{n} question{'' if n == 1 else 's'}"


def check_shards_filled(total: int, shard: tuple[int, int] | None) -> None:
    """Refuse a shard split of ``total`` (task, question) pairs that leaves a shard without any."""
    if shard and total < shard[1]:
        k, n = shard
        raise ConfigError(f"--shard {k}/{n}: {_questions(total)} cannot fill {n} shards (each shard needs one); "
                          f"run at most {total} shards, or more questions")


def fewest_in_a_shard(count: int, start: int, shard: tuple[int, int] | None) -> tuple[int, int | None]:
    """(fewest questions any shard gets, that shard) of a task whose ``count`` questions take the round-robin
    positions ``start ..`` (``plan.shard_slice``); (count, None) unsharded."""
    if not shard:
        return count, None
    n = shard[1]
    per_shard = [sum(1 for i in range(start, start + count) if i % n == k - 1) for k in range(1, n + 1)]
    fewest = min(per_shard)
    return fewest, per_shard.index(fewest) + 1


def check_batch_sizes(sizes: Sequence[int], counts: dict[str, int], shard: tuple[int, int] | None) -> None:
    """Refuse a batch size above the questions of a task (``counts``: task -> questions before sharding, in plan
    order) in this run or in its emptiest shard; batch size 1 always fits."""
    start = 0
    for task, count in counts.items():
        fewest, where = fewest_in_a_shard(count, start, shard)
        start += count
        too_big = [b for b in sizes if b > max(fewest, 1)]
        if too_big:
            b = max(too_big)
            place = f"shard {where}/{shard[1]}" if where else "this run"
            raise ConfigError(f"--batch-size {b}: task {task} has {_questions(fewest)} in {place}, so no batch of "
                              f"{b} would be decoded, yet its records would say B={b}; use sizes up to {max(fewest, 1)}, "
                              "or more questions")
