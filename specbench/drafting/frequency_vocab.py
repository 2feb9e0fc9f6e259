"""FR-Spec's frequency-ranked draft vocabulary (Zhao et al. 2025): a drafter's output head scores only the N most
frequent tokens of a text corpus, so each draft forward multiplies by N rows of the ``h x V`` head, not V.

The target still verifies with its whole head, so the output is unchanged; a token outside the N can only be
emitted by the target (as the root or a bonus token), never drafted. The choice is training-free: the rows are
the target's own (or the drafter's) head rows for those ids.

The reference (thunlp/FR-Spec, ``fr/fr.py``) counts every token of the first 1M documents of SlimPajama-627B with
the target's tokenizer and keeps the EOS token. No web corpus is reachable here, so the counts come from a
registered corpus (default ShareGPT, the most general text specbench ships; ``FR_CORPORA``), capped at
``FR_MAX_TOKENS`` tokens, and every stop token is kept (a stop token the draft cannot propose would end no draft).

The option's spelling, shared by every method that offers it (``vocab=...``):

>>> parse_vocab("fr:8192"), parse_vocab("full"), parse_vocab("trained")
(8192, 'full', 'trained')
>>> frequency_vocab(np.array([3, 0, 5, 3, 9]), 3, keep={1}).tolist()  # stop token 1, then ids 4 and 2 by count
[1, 2, 4]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import torch
from torch import nn

from specbench.datastore.tokenize_corpus import corpus_texts, tokenize_entries, tokenizer_hash
from specbench.errors import ConfigError
from specbench.files.build_lock import build_lock
from specbench.files.stale_tmp import tmp_sibling
from specbench.training.draft_vocab import rank_by_count

FR_CORPORA = ("sharegpt",)
FR_MAX_TOKENS = 20_000_000  # (about 20 s to count once on 2 CPU cores; cached per tokenizer)
VOCAB_CHOICES = ("trained", "full", "fr:N")
COUNTS_FILE = "counts.npy"
META_FILE = "counts.json"  # written last: its presence says the counts are whole


def parse_vocab(spec: str) -> int | str:
    """``trained`` (the checkpoint's own draft vocabulary, the whole one if it has none), ``full`` (the whole
    vocabulary) or ``fr:N`` (N >= 2, the N most frequent tokens); a one-line ``ConfigError`` otherwise."""
    if spec in ("trained", "full"):
        return spec
    size = spec[3:] if spec.startswith("fr:") else ""
    if not size.isdigit() or int(size) < 2:
        raise ConfigError(f"vocab must be one of {', '.join(VOCAB_CHOICES)} (N >= 2), not {spec!r}")
    return int(size)


def frequency_vocab(counts: np.ndarray, size: int, keep: Iterable[int] = ()) -> np.ndarray:
    """The sorted ids of the ``size`` most frequent tokens (``keep`` first, ties by the smaller id)."""
    ranked = rank_by_count(torch.as_tensor(np.asarray(counts)), min(size, len(counts)), keep)
    return np.sort(ranked.numpy()).astype(np.int64)


def kept_columns(columns: np.ndarray | None, keep: np.ndarray) -> np.ndarray:
    """The positions of a head's rows whose target id is in ``keep``: ``columns`` maps each row to its target id
    (None: row i is id i). A head over a reduced vocabulary keeps only what both vocabularies hold.

    >>> kept_columns(None, np.array([2, 5])).tolist(), kept_columns(np.array([1, 2, 4, 5]), np.array([2, 5, 7])).tolist()
    ([2, 5], [1, 3])
    """
    rows = np.asarray(keep, dtype=np.int64) if columns is None else np.flatnonzero(np.isin(np.asarray(columns), keep))
    if not len(rows):
        raise ConfigError("vocab=fr:N keeps none of the tokens this drafter's head scores: choose a larger N")
    return rows.astype(np.int64)


def frozen_rows(linear: nn.Module, rows: Any) -> nn.Linear:
    """A frozen ``nn.Linear`` holding only the output rows ``rows`` of ``linear`` (a copy, on its device and in its
    dtype, bias rows too): a head cut to the kept ids, so each forward multiplies by ``len(rows)`` rows.

    >>> cut = frozen_rows(torch.nn.Linear(2, 4), torch.tensor([3, 0]))
    >>> cut.out_features, cut.weight.requires_grad
    (2, False)
    """
    weight, bias = linear.weight.detach(), getattr(linear, "bias", None)
    index = torch.as_tensor(rows, dtype=torch.long, device=weight.device)
    cut = nn.Linear(weight.shape[1], len(index), bias=bias is not None).to(weight.device, weight.dtype)
    cut.weight = nn.Parameter(weight[index].clone(), requires_grad=False)
    if bias is not None:
        cut.bias = nn.Parameter(bias.detach()[index].clone(), requires_grad=False)
    return cut


def record_head_rows(env: Any, rows: int) -> None:
    """Record in ``env``'s artifacts how many rows the drafter's head kept after ``vocab=fr:N`` (fewer than N when
    its trained vocabulary holds only some of the N); nothing without ``fr:N``."""
    if "fr_vocab" in env.artifacts:
        env.artifacts["fr_vocab"]["head_rows"] = int(rows)


def counts_dir(cache_root: Path, tokenizer: Any, corpora: tuple[str, ...], max_tokens: int) -> Path:
    """Where the counts of (tokenizer, corpora, cap) are kept."""
    return Path(cache_root) / "token-counts" / tokenizer_hash(tokenizer) / f"{'+'.join(corpora)}-max{max_tokens}"


def corpus_counts(cache_root: Path, tokenizer: Any, data_dir: Path | None, corpora: tuple[str, ...] = FR_CORPORA,
                  max_tokens: int = FR_MAX_TOKENS) -> np.ndarray:
    """How often each token id occurs in ``corpora`` (their first ``max_tokens`` tokens), counted once and cached
    as ``counts.npy``; the array has one entry per id of ``tokenizer``."""
    folder = counts_dir(cache_root, tokenizer, corpora, max_tokens)
    if not (folder / META_FILE).is_file():
        with build_lock(folder):  # another process may be counting the same corpus
            if not (folder / META_FILE).is_file():
                print(f"[specbench] counting tokens of {'+'.join(corpora)} for FR-Spec (once) -> {folder}",
                      file=sys.stderr)
                _count(folder, tokenizer, data_dir, corpora, max_tokens)
    counts = np.load(folder / COUNTS_FILE, allow_pickle=False)
    if counts.ndim != 1 or len(counts) != len(tokenizer):
        raise ConfigError(f"{folder / COUNTS_FILE} does not hold one count per token (delete it to count again)")
    return counts


def _count(folder: Path, tokenizer: Any, data_dir: Path | None, corpora: tuple[str, ...], max_tokens: int) -> None:
    counts = np.zeros(len(tokenizer), dtype=np.int64)
    total = 0
    for ids in tokenize_entries(corpus_texts(corpora, data_dir), tokenizer, max_tokens, desc="counting tokens"):
        counts += np.bincount(ids, minlength=len(counts))[: len(counts)]
        total += len(ids)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = tmp_sibling(folder / COUNTS_FILE)
    with open(tmp, "wb") as f:
        np.save(f, counts, allow_pickle=False)
    tmp.replace(folder / COUNTS_FILE)
    tmp = tmp_sibling(folder / META_FILE)
    tmp.write_text(json.dumps({"corpora": list(corpora), "max_tokens": max_tokens, "tokens": total}))
    tmp.replace(folder / META_FILE)


def choose_draft_vocab(spec: str, trained: np.ndarray | None, env: Any) -> np.ndarray | None:
    """The target ids a drafter's head scores for its ``vocab`` option ``spec`` (None: the whole vocabulary):
    ``trained`` keeps ``trained`` (its checkpoint's), ``full`` drops it, ``fr:N`` ranks ``env``'s tokenizer's
    counts of ``FR_CORPORA`` (``env``: a ``MethodEnv``; the choice is recorded in its artifacts)."""
    choice = parse_vocab(spec)
    if choice == "trained":
        return trained
    if choice == "full":
        return None
    from specbench.models.loading import stop_token_ids

    counts = corpus_counts(env.cache_dir, env.tokenizer, env.data_dir, FR_CORPORA, FR_MAX_TOKENS)
    rows = int(env.model.get_output_embeddings().weight.shape[0])
    counts = counts[:rows]  # (a tokenizer may hold more ids than the head has rows: those are never output)
    vocab = frequency_vocab(counts, int(choice), {i for i in stop_token_ids(env.tokenizer, env.model) if i < rows})
    covered = float(counts[vocab].sum() / max(1, counts.sum()))
    env.artifacts["fr_vocab"] = {"size": len(vocab), "corpora": list(FR_CORPORA), "max_tokens": FR_MAX_TOKENS,
                                 "corpus_share": round(covered, 4)}
    return vocab
