"""Tokenising registered corpora with the target's tokenizer, in batches, with a progress bar."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

BATCH = 512


def tokenizer_hash(tokenizer: Any) -> str:
    """A short fingerprint of a tokenizer's vocabulary (same vocabulary -> same ids)."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    return hashlib.sha256(json.dumps(vocab, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def corpus_texts(names: Iterable[str], data_dir: Path | None) -> Iterator[str]:
    """Text entries of the registered corpora ``names``, one after the other."""
    from specbench.plugins.registry import CORPORA

    for name in names:
        yield from CORPORA.get(name)(data_dir)


def tokenize_entries(
    texts: Iterable[str], tokenizer: Any, max_tokens: int | None = None, desc: str = "tokenizing", stats: dict | None = None
) -> Iterator[np.ndarray]:
    """int32 token ids of each text (encoded on its own, no special tokens), stopping at ``max_tokens``.

    ``stats`` (if given) receives ``entries`` and ``tokens`` counts as they are produced.
    """
    from tqdm import tqdm

    total = 0
    n_entries = 0
    bar = tqdm(desc=desc, unit=" tok", unit_scale=True, total=max_tokens, mininterval=1.0)
    batch: list[str] = []

    def flush() -> Iterator[np.ndarray]:
        nonlocal total, n_entries
        ids = tokenizer(batch, add_special_tokens=False)["input_ids"]
        for seq in ids:
            arr = np.asarray(seq, dtype=np.int32)
            if max_tokens is not None and total + len(arr) > max_tokens:
                arr = arr[: max_tokens - total]
            if len(arr):
                total += len(arr)
                n_entries += 1
                bar.update(len(arr))
                yield arr
            if max_tokens is not None and total >= max_tokens:
                return

    try:
        for text in texts:
            batch.append(text)
            if len(batch) >= BATCH:
                yield from flush()
                batch = []
                if max_tokens is not None and total >= max_tokens:
                    return
        if batch:
            yield from flush()
    finally:
        bar.close()
        if stats is not None:
            stats.update(entries=n_entries, tokens=total)
