"""A small draft LM's training sequences (``draft_distill.py``), read from the shared feature store: ids and the
target's greedy labels.

The store keeps sequences of up to 512 tokens (the other drafters' ``max_seq_len``); the draft trains on
``seq_len`` (256) of them, cut as ``sequence_ids`` cuts: a prompt that fills the window keeps its tail
(``seq_len // 2`` tokens before the answer), otherwise the sequence's head. Labels are the store's, the
target's greedy token after each answer position (-1 on the prompt).

Example: a stored sequence of 300 tokens answering from 100, ``seq_len=256`` -> its first 256 tokens, labels
-1 on positions 0..99 and the stored labels of positions 100..255; one answering from 260 -> tokens
132..387, the answer starting at 128.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STORE_SEQ_LEN = 512  # the store the other drafters read: one target pass for all of them
MIN_ANSWER = 4  # answer positions a sequence needs to be used (as before the store)


@dataclass
class LabelledSequence:
    """One chat-formatted corpus sequence and the target's greedy label after each position."""

    ids: list[int]
    labels: list[int]  # target greedy token after each position; -1 where not trained (prompt)


def cut(length: int, start: int, seq_len: int) -> tuple[int, int, int]:
    """(first token kept, tokens kept, answer start in the kept window) of a stored sequence.

    >>> cut(300, 100, 256), cut(600, 260, 256), cut(50, 10, 256)
    ((0, 256, 100), (132, 256, 128), (0, 50, 10))
    """
    first = start - seq_len // 2 if start >= seq_len - 4 else 0
    return first, min(length - first, seq_len), start - first


def walk(lengths: np.ndarray, starts: np.ndarray, seq_len: int, tokens: int) -> tuple[list[int], int, bool]:
    """(table rows used, answer positions counted, whether they reached ``tokens``): sequences in stream
    order with at least ``MIN_ANSWER`` answer positions in their window, until ``tokens`` are counted."""
    rows, got = [], 0
    for r, (length, start) in enumerate(zip(lengths.tolist(), starts.tolist())):
        _, kept, answer = cut(length, start, seq_len)
        if kept - answer < MIN_ANSWER:
            continue
        rows.append(r)
        got += kept - answer
        if got >= tokens:
            return rows, got, True
    return rows, got, False


def labelled(item: dict, seq_len: int) -> LabelledSequence:
    """A stored sequence (``read_sequences`` dict) cut to ``seq_len`` with its labels."""
    ids, start = item["ids"].tolist(), item["start"]
    first, kept, answer = cut(len(ids), start, seq_len)
    labels = item["labels"].tolist()[: kept - answer]  # stored from ``start`` on = window position ``answer``
    return LabelledSequence(ids[first : first + kept], [-1] * answer + labels)


def select(store, seq_len: int, tokens: int, heldout_every: int, heldout_span: int | None = None,
           heldout_cap: int | None = None, progress: bool = True) -> tuple[list[LabelledSequence], list[LabelledSequence]]:
    """(train, held-out) sequences of the first ``tokens`` answer positions (every ``heldout_every``-th
    sequence held out), extending ``store`` when it is short. ``heldout_span``: the held-out sequences of
    the first ``heldout_span`` positions instead (at most ``heldout_cap`` labels), one set for every size."""
    goal = max(tokens, heldout_span or 0)

    def enough(table) -> float | None:
        _, got, done = walk(table.length, table.start, seq_len, goal)
        return None if done else (goal - got) * 1.1

    table = store.grow_until(enough, progress, "draft: target labels")
    rows, _, _ = walk(table.length, table.start, seq_len, tokens)
    held_of = table.index % heldout_every == heldout_every - 1
    train = [r for r in rows if not held_of[r]]
    held = [r for r in (rows if heldout_span is None else walk(table.length, table.start, seq_len, heldout_span)[0])
            if held_of[r]]
    if heldout_cap is not None:
        counts = np.cumsum([cut(int(table.length[r]), int(table.start[r]), seq_len)[1]
                            - cut(int(table.length[r]), int(table.start[r]), seq_len)[2] for r in held])
        held = held[: int(np.searchsorted(counts, heldout_cap)) + 1]
    chosen = np.array(sorted(train + held), dtype=np.int64)
    items = store.sequences(chosen)
    out = {int(r): labelled(item, seq_len) for r, item in zip(chosen.tolist(), items)}
    return [out[r] for r in train], [out[r] for r in held]
