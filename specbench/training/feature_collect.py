"""Batched teacher forcing: the frozen target over the corpus stream, several sequences per forward.

The target pass is a prefill, so it batches: a window of upcoming sequences is sorted by length and cut
into batches of at most ``TOKEN_BUDGET`` padded tokens. Right padding: under the causal mask every real
position sees exactly its own prefix, as in a one-sequence forward, so no padding mask is needed. The
final-norm hidden states of the response positions go through the output head in one matmul per batch
for the greedy labels.

Example: lengths ``[300, 40, 280, 50]`` with a budget of 700 -> batches ``[[0, 2], [3, 1]]`` (2 x 300 and
2 x 50 padded tokens) instead of four forwards.
"""
from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from specbench.training.distill_data import interleave, sequence_ids
from specbench.training.feature_shards import Index, SequenceFeatures, write_shard

WINDOW = 64  # upcoming sequences sorted by length together
TOKEN_BUDGET = 4096  # padded tokens per forward
SHARD_POSITIONS = 25_000  # response positions per shard (a shard holds whole windows, so a little more)
TEACHER_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def length_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Indices of ``lengths`` grouped longest first, each group's ``size x longest <= budget`` (a sequence
    longer than the budget gets a group of its own).

    >>> length_batches([300, 40, 280, 50], 700)
    [[0, 2], [3, 1]]
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    out: list[list[int]] = []
    for i in order:
        if out and (len(out[-1]) + 1) * lengths[out[-1][0]] <= budget:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def teacher(model: torch.nn.Module, dtype: str) -> torch.nn.Module:
    """The model the features are computed with: ``model`` itself, or a copy in ``dtype`` (``bfloat16``:
    the references compute their features with the target in half precision)."""
    import copy

    want = TEACHER_DTYPES[dtype]
    if next(model.parameters()).dtype == want:
        return model
    return copy.deepcopy(model).to(want).eval()


@torch.inference_mode()
def forward_batch(model: torch.nn.Module, seqs: list[tuple[list[int], int]], layers: Sequence[int],
                  clock: dict[str, float] | None = None) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]:
    """Per sequence ``(ids, start)``: (hidden [r, h] fp16, greedy labels [r] int32, layer states [r, m, h] fp16
    or None) over its response positions ``start .. len - 1`` (``r = len - start``), from one padded forward."""
    device = next(model.parameters()).device
    width = max(len(ids) for ids, _ in seqs)
    x = torch.zeros(len(seqs), width, dtype=torch.long)  # [B, S] right-padded with id 0
    for b, (ids, _) in enumerate(seqs):
        x[b, : len(ids)] = torch.tensor(ids)
    t0 = time.perf_counter()
    # no attention mask: with right padding the causal mask alone keeps every real position off the pads (they
    # come after it), and without a mask attention takes its fused causal path (measured 2-3x faster on CPU)
    out = model.base_model(input_ids=x.to(device), output_hidden_states=bool(layers))
    t1 = time.perf_counter()
    picks = [(b, start, len(ids)) for b, (ids, start) in enumerate(seqs)]
    hidden = torch.cat([out.last_hidden_state[b, a:e] for b, a, e in picks])  # [R, h] response rows only
    labels = model.get_output_embeddings()(hidden).argmax(-1)  # [R]
    t2 = time.perf_counter()
    hid16, lab32 = hidden.to(torch.float16).cpu(), labels.to(torch.int32).cpu()
    states = None
    if layers:  # [R, m, h]
        states = torch.cat([torch.stack([out.hidden_states[i][b, a:e] for i in layers], 1) for b, a, e in picks])
        states = states.to(torch.float16).cpu()
    if clock is not None:
        clock["forward"] = clock.get("forward", 0.0) + t1 - t0
        clock["head"] = clock.get("head", 0.0) + t2 - t1
        clock["copy"] = clock.get("copy", 0.0) + time.perf_counter() - t2
    bounds = list(itertools.accumulate([e - a for _, a, e in picks], initial=0))
    return [(hid16[bounds[k] : bounds[k + 1]], lab32[bounds[k] : bounds[k + 1]],
             None if states is None else states[bounds[k] : bounds[k + 1]]) for k in range(len(seqs))]


def _windows(tokenizer: Any, corpora: Sequence[str], data_dir: Path | None, cursor: int,
             max_seq_len: int) -> Iterator[list[tuple[int, list[int], int]]]:
    """Windows of the stream from ``cursor`` on: ``(index, ids, start)`` per sequence, unusable ones included."""
    stream = itertools.islice(enumerate(interleave(corpora, data_dir)), cursor, None)
    while True:
        window = list(itertools.islice(stream, WINDOW))
        if not window:
            return
        yield [(i, *sequence_ids(tokenizer, prompt, response, max_seq_len)) for i, (prompt, response) in window]


def extend_store(folder: Path, index: Index, model: torch.nn.Module, tokenizer: Any, corpora: Sequence[str],
                 data_dir: Path | None, max_seq_len: int, layers: Sequence[int], teacher_dtype: str, goal: int,
                 progress: bool = True, desc: str = "target forward", clock: dict[str, float] | None = None) -> Index:
    """Teacher-force the stream from ``index.cursor`` on until ``goal`` response positions are stored (or the
    corpora run out: ``index.exhausted``), writing a shard every ~``SHARD_POSITIONS`` positions; returns
    the updated index (also written to ``folder``)."""
    from tqdm import tqdm

    net = teacher(model, teacher_dtype)
    have = index.positions
    bar = tqdm(total=goal, initial=have, desc=desc, unit="pos", disable=not progress, smoothing=0.1)
    pending: list[SequenceFeatures] = []
    t_shard = time.perf_counter()
    windows = _windows(tokenizer, corpora, data_dir, index.cursor, max_seq_len)

    def flush(cursor: int) -> None:
        nonlocal pending, t_shard
        if pending:
            index.shards.append(write_shard(folder, len(index.shards), pending, cursor, time.perf_counter() - t_shard))
        elif index.shards:  # nothing usable since the last shard: only the cursor moves
            index.shards[-1].cursor = cursor
        index.write(folder)
        pending, t_shard = [], time.perf_counter()

    cursor = index.cursor
    while have < goal:
        window = next(windows, None)
        if window is None:
            index.exhausted = True
            break
        rows = list(itertools.accumulate(max(0, len(ids) - start) for _, ids, start in window))
        # stop at the sequence that reaches the goal: the next call continues from there
        window = window[: next((k + 1 for k, r in enumerate(rows) if r >= goal - have), len(window))]
        cursor = window[-1][0] + 1
        seqs = [(i, ids, start) for i, ids, start in window if len(ids) - start >= 1]
        done: dict[int, SequenceFeatures] = {}
        for group in length_batches([len(ids) for _, ids, _ in seqs], TOKEN_BUDGET):
            outs = forward_batch(net, [(seqs[k][1], seqs[k][2]) for k in group], layers, clock)
            for k, (hid, lab, st) in zip(group, outs):
                done[k] = SequenceFeatures(seqs[k][0], seqs[k][1], seqs[k][2], hid, lab, st)
                have += done[k].rows
                bar.update(done[k].rows)
        pending += [done[k] for k in range(len(seqs))]  # back in stream order
        if sum(s.rows for s in pending) >= SHARD_POSITIONS:
            flush(cursor)
    flush(cursor)
    bar.close()
    if index.exhausted and progress:
        print(f"[features] corpora {','.join(corpora)} ran out after {index.positions} positions", file=sys.stderr)
    return index
