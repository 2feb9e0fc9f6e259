"""Index quality of a DReSD datastore: recall of the stored (IVF) index vs exact search, and latency.

Queries are final-norm hidden states of held-out corpus text (pairs after those the build used),
so they are realistic but not datastore entries themselves.
"""
from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench_methods.dresd.datastore.build import encode_pair
from specbench_methods.dresd.datastore.embed import embed_batch
from specbench_methods.dresd.datastore.store import DenseDatastore


def heldout_queries(ds: DenseDatastore, model: Any, tokenizer: Any, corpus: str | None, data_dir: Path | None, n: int,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` held-out hidden states [n, h] and the model's greedy next token at each [n]."""
    from specbench.api import iter_pairs

    corpus = corpus or ds.header["corpora"][0]
    skip = int(ds.header.get("items_used", 0)) if corpus in ds.header.get("corpora", []) else 0
    text_format = ds.header.get("settings", {}).get("text_format", "qa")  # stores from before the option: qa
    hidden, roots = [], []
    total = 0
    for prompt, resp in itertools.islice(iter_pairs(corpus, data_dir), skip, None):
        ids = encode_pair(tokenizer, prompt, resp, text_format)[:512]
        if len(ids) < 2:
            continue
        h = embed_batch(model, [ids])[0]  # [len, h]
        with torch.inference_mode():
            g = model.get_output_embeddings()(torch.from_numpy(h)).argmax(-1).numpy()  # [len]
        hidden.append(h)
        roots.append(g)
        total += len(ids)
        if total >= 4 * n:
            break
    h_all, g_all = np.concatenate(hidden), np.concatenate(roots)
    pick = np.sort(np.random.default_rng(seed).choice(len(h_all), min(n, len(h_all)), replace=False))
    return h_all[pick], g_all[pick]


def evaluate_index(ds: DenseDatastore, model: Any, tokenizer: Any, corpus: str | None, data_dir: Path | None,
                   n_queries: int, k: int, nprobes: list[int]) -> dict[str, Any]:
    """Recall@k / recall@1 per nprobe vs exact search, mean per-query latency, and draft survivor rate."""
    hidden, roots = heldout_queries(ds, model, tokenizer, corpus, data_dir, n_queries)
    q = ds.transform.apply(hidden)  # [n, d]
    k = min(k, len(ds))

    def timed(exact: bool, nprobe: int) -> tuple[np.ndarray, float]:
        ids = np.empty((len(q), k), dtype=np.int64)
        t = time.perf_counter()
        for i in range(len(q)):  # one query at a time, as in decoding
            ids[i] = ds.search(q[i : i + 1], k, nprobe, exact)[1][0]
        return ids, (time.perf_counter() - t) / len(q) * 1e3

    exact_ids, exact_ms = timed(True, 0)
    t = time.perf_counter()
    for i in range(len(q)):
        ds.transform.apply(hidden[i])
    transform_ms = (time.perf_counter() - t) / len(q) * 1e3
    survive = np.mean([(ds.values[row[row >= 0], 0] == g).any() for row, g in zip(exact_ids, roots)])
    out: dict[str, Any] = {
        "datastore": ds.header.get("path"), "entries": len(ds), "index": ds.header.get("index"), "queries": len(q), "k": k,
        "exact_ms_per_query": round(exact_ms, 3), "transform_ms_per_query": round(transform_ms, 4),
        "survivor_rate": round(float(survive), 3), "ivf": [],
    }
    if ds.index is not None and hasattr(ds.index, "nprobe"):
        for nprobe in nprobes:
            ids, ms = timed(False, nprobe)
            rec_k = np.mean([len(set(a[a >= 0]) & set(b[b >= 0])) / max(1, (b >= 0).sum()) for a, b in zip(ids, exact_ids)])
            rec_1 = np.mean(ids[:, 0] == exact_ids[:, 0])
            out["ivf"].append({"nprobe": nprobe, "recall_at_k": round(float(rec_k), 4), "recall_at_1": round(float(rec_1), 4),
                               "ms_per_query": round(ms, 3)})
    return out
