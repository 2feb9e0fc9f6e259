"""The static automaton on disk: built from the REST corpora on first use, cached, hash-checked on every load.

Corpus text, as the reference's ``build_static_sam.py``: every (prompt, response) pair of each corpus
(``specbench.api.iter_pairs``) is one sequence, tokenised with the tokenizer's defaults and closed with
EOS; then every token id of the vocabulary follows as a one-token sequence (so any root has a match of
at least one token, as in the reference). Sequences containing a benchmark prompt verbatim are dropped,
as REST's datastore does.

A directory (format ``specbench-samd-static`` version 1, no pickle)::

    header.json      what it was built from (tokenizer hash, corpora, cap), sizes, build time, and the
                     sha256 of every file (checked when it is opened)
    tokens.npy       int32 [n]        the corpus tokens
    length.npy, link.npy, count.npy, first_end.npy      [S] one entry per state
    edge_off.npy [S + 1], edge_tok.npy int32 [E], edge_dst.npy [E]   transitions, sorted by token

Example: ``cached_static_sam(cache, ("gsm8k_train", "sharegpt"), tok, "smollm2", data_dir, None)`` builds
``<cache>/datastores/samd/<tokenizer-hash>/gsm8k_train+sharegpt-v1/`` once (a lock keeps two runs from
building it twice) and then memory-maps it.
"""
from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from specbench_methods.samd.static_build import SAMArrays, build_sam_arrays
from specbench_methods.samd.static_sam import StaticSAM
from specbench.api import (ConfigError, ContentMismatch, DatastoreError, build_lock, dir_bytes, file_sha256, iter_pairs,
                           parse_json, prompt_probes, remove_stale_tmp, strict_json, test_prompts, tmp_sibling,
                           tokenizer_hash, verify_sha256)

FORMAT, FORMAT_VERSION, HEADER = "specbench-samd-static", 1, "header.json"
ARRAYS = ("length", "link", "count", "first_end", "edge_off", "edge_tok", "edge_dst")
FILES = ("tokens.npy",) + tuple(f"{a}.npy" for a in ARRAYS)
BATCH = 256  # texts per tokenizer call


def corpus_sequences(corpora: tuple[str, ...], tokenizer: Any, data_dir: Path | None,
                     max_tokens: int | None) -> Iterator[np.ndarray]:
    """int32 tokens of every (prompt, response) pair, EOS-closed, until ``max_tokens`` corpus tokens."""
    from tqdm import tqdm

    eos = tokenizer.eos_token_id
    bar = tqdm(desc=f"samd: tokenizing {'+'.join(corpora)}", unit=" tok", unit_scale=True, total=max_tokens, mininterval=1.0)
    total = 0

    def batches() -> Iterator[list[str]]:
        batch: list[str] = []
        for name in corpora:
            try:
                pairs = iter_pairs(name, data_dir)
            except KeyError as e:
                raise ConfigError(f"samd: {e.args[0]}") from None
            for prompt, response in pairs:
                batch.append(f"{prompt}\n{response}" if prompt else response)
                if len(batch) == BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch

    try:
        for batch in batches():
            for ids in tokenizer(batch)["input_ids"]:
                closed = eos is not None and (not ids or ids[-1] != eos)
                seq = np.asarray(list(ids) + [eos] if closed else ids, dtype=np.int32)
                if max_tokens is not None:
                    seq = seq[: max_tokens - total]
                if len(seq):
                    total += len(seq)
                    bar.update(len(seq))
                    yield seq
                if max_tokens is not None and total >= max_tokens:
                    return
    finally:
        bar.close()


def vocabulary_sequences(vocab: int, eos: int | None) -> np.ndarray:
    """Every token id as its own EOS-closed sequence, concatenated: ``[0, eos, 1, eos, ..., eos, ...]``.

    >>> vocabulary_sequences(3, 1).tolist()
    [0, 1, 1, 2, 1]
    """
    ids = np.arange(vocab, dtype=np.int32)
    if eos is None:
        return ids
    pairs = np.stack([ids, np.full(vocab, eos, dtype=np.int32)], axis=1).ravel()
    return np.delete(pairs, 2 * eos + 1) if 0 <= eos < vocab else pairs


def contaminated(sam: StaticSAM, sequences: list[np.ndarray], probes: list[list[int]]) -> tuple[set[int], int]:
    """(indices of the sequences containing a probe, number of probes found); the automaton answers
    "occurs anywhere" for every probe, the rare found ones are then located sequence by sequence."""
    found = [p for p in probes if sam.contains(p)]
    drop: set[int] = set()
    for probe in found:
        p = np.asarray(probe, dtype=np.int32)
        for i, seq in enumerate(sequences):
            if len(seq) >= len(p) and any(np.array_equal(seq[j : j + len(p)], p) for j in np.flatnonzero(seq == p[0])):
                drop.add(i)
    return drop, len(found)


def build_static_sam(corpora: tuple[str, ...], out: Path, tokenizer: Any, tokenizer_id: str, data_dir: Path | None,
                     max_tokens: int | None = None, check_test_prompts: bool = True) -> dict[str, Any]:
    """Tokenise ``corpora``, build their automaton and write it to ``out`` (through a sibling temp dir)."""
    from tqdm import tqdm

    t0 = time.time()
    sequences = list(corpus_sequences(corpora, tokenizer, data_dir, max_tokens))
    vocab = len(tokenizer)
    singles = vocabulary_sequences(vocab, tokenizer.eos_token_id)
    probes = prompt_probes(test_prompts(data_dir), tokenizer) if check_test_prompts else []
    drop: set[int] = set()
    for attempt in (1, 2):  # the second pass only when a benchmark prompt was found (and dropped)
        kept = [s for i, s in enumerate(sequences) if i not in drop]
        tokens = np.concatenate(kept + [singles]) if kept else singles
        with tqdm(total=100, desc=f"samd: automaton of {len(tokens):,} tokens", unit="%", mininterval=1.0,
                  bar_format="{l_bar}{bar}| {n:.0f}/{total} [{elapsed}<{remaining}]") as bar:
            arrays = build_sam_arrays(tokens, vocab, lambda stage, f: bar.update(100 * f - bar.n))
        sam = StaticSAM(arrays, tokens)
        if attempt == 2:
            break
        drop, n_found = contaminated(sam, sequences, probes)
        if not drop:
            break
        print(f"[specbench] samd: dropping {len(drop)} corpus sequence(s) containing a benchmark prompt verbatim", file=sys.stderr)
    header = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "kind": "samd-static",
        "tokenizer_id": tokenizer_id, "tokenizer_hash": tokenizer_hash(tokenizer), "vocab_size": vocab,
        "eos_id": tokenizer.eos_token_id, "corpora": list(corpora), "max_tokens": max_tokens,
        "n_sequences": len(sequences) - len(drop), "n_tokens": int(len(tokens)), "n_states": arrays.n_states,
        "n_edges": arrays.n_edges,
        "contamination_check": {"probes": len(probes), "prompts_found": n_found, "entries_dropped": len(drop)},
    }
    return write_static_sam(Path(out), tokens, arrays, header, time.time() - t0)


def write_static_sam(out: Path, tokens: np.ndarray, arrays: SAMArrays, header: dict[str, Any],
                     seconds: float) -> dict[str, Any]:
    """The arrays as .npy files plus a header with their sizes and sha256, written last, then renamed into
    place; returns the header written."""
    tmp = tmp_sibling(out)
    shutil.rmtree(out.parent / f".{out.name}.tmp", ignore_errors=True)  # (the name builds used before tmp_sibling)
    remove_stale_tmp(out.parent)  # killed builds' folders
    tmp.mkdir(parents=True)
    for name, arr in zip(FILES, (tokens, *(getattr(arrays, a) for a in ARRAYS))):
        np.save(tmp / name, np.ascontiguousarray(arr), allow_pickle=False)
    files = {name: (tmp / name).stat().st_size for name in FILES}
    header = {**header, "files": files, "sha256": {name: file_sha256(tmp / name) for name in FILES},
              "build_seconds": round(seconds, 1), "build_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (tmp / HEADER).write_text(strict_json(header, indent=1), encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return header


def load_static_sam(path: str | Path, tokenizer: Any) -> StaticSAM:
    """Open a built automaton memory-mapped, after checking its header, the tokenizer and every file's hash."""
    path = Path(path)
    rebuild = f"delete {path} to rebuild it (or `specbench datastore build --kind samd --out {path} ...`)"
    try:
        header = parse_json((path / HEADER).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DatastoreError(f"{path}: no readable {HEADER} ({type(e).__name__}); {rebuild}") from None
    if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
        raise DatastoreError(f"{path}: not a samd static automaton of format version {FORMAT_VERSION}; {rebuild}")
    if header.get("tokenizer_hash") != tokenizer_hash(tokenizer) or header.get("vocab_size") != len(tokenizer):
        raise DatastoreError(f"{path}: built with another tokenizer ({header.get('tokenizer_id')!r}); {rebuild}")
    arrays = []
    for name in FILES:
        f = path / name
        if not f.is_file() or f.stat().st_size != header.get("files", {}).get(name):
            raise DatastoreError(f"{path}: {name} is missing or has the wrong size (truncated?); {rebuild}")
        try:
            verify_sha256(f, str(header.get("sha256", {}).get(name) or ""), f"the automaton's {HEADER}")
        except ContentMismatch as e:
            raise DatastoreError(f"{e} (corrupt); {rebuild}") from None
        arrays.append(np.load(f, mmap_mode="r", allow_pickle=False))
    tokens, *rest = arrays
    sam_arrays = SAMArrays(*rest)
    S, E = header.get("n_states"), header.get("n_edges")
    if len(tokens) != header.get("n_tokens") or sam_arrays.n_states != S or sam_arrays.n_edges != E \
            or any(len(a) != S for a in rest[:4]) or len(sam_arrays.edge_off) != S + 1:
        raise DatastoreError(f"{path}: array shapes do not match the header; {rebuild}")
    return StaticSAM(sam_arrays, tokens, header, path)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text)[:80]


def cached_static_sam(cache_root: Path, corpora: tuple[str, ...], tokenizer: Any, tokenizer_id: str,
                      data_dir: Path | None, max_tokens: int | None) -> StaticSAM:
    """The cached automaton of (tokenizer, corpora, cap), built on first use."""
    name = "+".join(corpora) + (f"-max{max_tokens}" if max_tokens else "") + f"-v{FORMAT_VERSION}"
    path = Path(cache_root) / "datastores" / "samd" / tokenizer_hash(tokenizer) / _slug(name)
    if not (path / HEADER).is_file():
        with build_lock(path):  # another process may be building the same automaton
            if not (path / HEADER).is_file():
                print(f"[specbench] building the samd static automaton {name} (once) -> {path}", file=sys.stderr)
                build_static_sam(corpora, path, tokenizer, tokenizer_id, data_dir, max_tokens)
    return load_static_sam(path, tokenizer)


def static_artifacts(sam: StaticSAM) -> dict[str, Any]:
    """What a run depends on: the automaton's path, corpora, sizes, build time and file hashes."""
    h = sam.header
    return {"static_sam": str(sam.path), "static_corpora": h.get("corpora"), "static_tokens": h.get("n_tokens"),
            "static_states": h.get("n_states"), "static_edges": h.get("n_edges"),
            "static_bytes": dir_bytes(sam.path) if sam.path else 0, "static_sha256": h.get("sha256"),
            "static_build_seconds": h.get("build_seconds"), "static_contamination_check": h.get("contamination_check")}
