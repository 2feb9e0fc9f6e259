"""The on-disk token datastore of REST: int32 token chunks with a suffix array each, as ``.npy`` + JSON;
building one (``write_datastore``) and reading its files back with every check (searching it:
``suffix_array.TokenDatastore``).

On-disk layout of a datastore directory (format version 1, no pickle)::

    header.json              {"format": "specbench-token-datastore", "format_version": 1, "tokenizer_id",
                              "tokenizer_hash", "vocab_size", "corpora", "n_tokens", "n_entries", "build_time",
                              "build_seconds", "max_token_id", "tokens_sha256", "chunks": [{"n_tokens",
                              "n_entries", "files": {name: bytes}}], ...}
    chunk_000.tokens.npy     int32 [n]  entries' tokens, concatenated (an entry never spans two chunks)
    chunk_000.sa.npy         int32 [n]  suffix array of the chunk (pydivsufsort; int64 above 2^31 tokens)
    chunk_000.entries.npy    int64 [e]  start offset of every entry in the chunk

``header.json`` is written last, so a directory without it is an unfinished build. Loading memory-maps the
arrays (``np.load(mmap_mode="r")``), so opening is instant whatever the size; it checks file sizes, shapes
and dtypes against the header and raises ``DatastoreError`` (a ``ConfigError``/``ValueError``) on any mismatch.

Example: chunk tokens ``[5, 6, 7, 5, 6, 9]``; the query ``[5, 6]`` matches at positions 0 and 3, whose
continuations (m = 2) are ``[7, 5]`` and ``[9, -1]`` (``-1`` pads past the chunk end).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from specbench.errors import DatastoreError
from specbench.files.content_hash import ContentMismatch, stream_sha256, verify_sha256
from specbench.files.jsonfile import parse_json, strict_json
from specbench.files.stale_tmp import remove_stale_tmp, tmp_sibling

FORMAT = "specbench-token-datastore"
FORMAT_VERSION = 1
HEADER = "header.json"
DEFAULT_CHUNK_TOKENS = 1 << 28  # 268M tokens: a 4-byte-SA chunk of ~2 GB; ShareGPT fits in one


def suffix_array(tokens: np.ndarray) -> np.ndarray:
    """Suffix array of an int32 token array (lexicographic order of ``tokens[i:]``)."""
    if len(tokens) == 0:
        return np.zeros(0, dtype=np.int32)
    from pydivsufsort import divsufsort  # lazy: keeps module import light

    sa = divsufsort(np.ascontiguousarray(tokens, dtype=np.int32))
    return sa.astype(np.int32 if len(tokens) < 2**31 else np.int64, copy=False)


def pack_chunks(entries: Iterable[Sequence[int]], vocab_size: int, chunk_tokens: int) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """Concatenate token entries into chunks of at most ``chunk_tokens``; entries never span chunks.

    An entry longer than a chunk is split into chunk-sized entries. Yields (tokens int32 [n], entry
    starts int64 [e]). Raises ``DatastoreError`` on a token id outside ``[0, vocab_size)``.
    """
    if chunk_tokens < 1:
        raise DatastoreError("chunk_tokens must be >= 1")
    parts: list[np.ndarray] = []
    starts: list[int] = []
    size = 0
    for entry in entries:
        arr = np.asarray(entry, dtype=np.int64)
        if arr.size == 0:
            continue
        if arr.min() < 0 or arr.max() >= vocab_size:
            bad = int(arr.max()) if arr.max() >= vocab_size else int(arr.min())
            raise DatastoreError(f"token id {bad} is outside the vocabulary [0, {vocab_size})")
        for piece_start in range(0, len(arr), chunk_tokens):
            piece = arr[piece_start : piece_start + chunk_tokens].astype(np.int32)
            if size + len(piece) > chunk_tokens:
                yield np.concatenate(parts), np.asarray(starts, dtype=np.int64)
                parts, starts, size = [], [], 0
            starts.append(size)
            parts.append(piece)
            size += len(piece)
    if parts:
        yield np.concatenate(parts), np.asarray(starts, dtype=np.int64)


def drop_entries(tokens: np.ndarray, starts: np.ndarray, drop: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """The chunk without the entries whose indices are in ``drop``."""
    ends = np.append(starts[1:], len(tokens))
    keep = [i for i in range(len(starts)) if i not in drop]
    parts = [tokens[starts[i] : ends[i]] for i in keep]
    lengths = np.array([len(p) for p in parts], dtype=np.int64)
    new_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(parts) else np.zeros(0, np.int64)
    return (np.concatenate(parts) if parts else np.zeros(0, np.int32)), new_starts.astype(np.int64)


def chunk_files(i: int) -> tuple[str, str, str]:
    return (f"chunk_{i:03d}.tokens.npy", f"chunk_{i:03d}.sa.npy", f"chunk_{i:03d}.entries.npy")


def verify_contents(path: Path, header: dict[str, Any], tokens: list[np.ndarray]) -> None:
    """Full content check: every chunk file's sha256 (streamed) against the header, or
    for stores built before per-file hashes, the tokens against ``tokens_sha256``; token ids in range."""
    rebuild = f"rebuild it with `specbench datastore build --kind rest --out {path} ...` or delete it"
    legacy = False
    for i, meta in enumerate(header["chunks"]):
        expected = meta.get("sha256")
        if not isinstance(expected, dict):
            legacy = True
            continue
        for name in chunk_files(i):
            try:
                verify_sha256(path / name, str(expected.get(name) or ""), f"the datastore's {HEADER}")
            except ContentMismatch as e:
                raise DatastoreError(f"{e} (corrupt); {rebuild}") from None
    if legacy and header.get("tokens_sha256"):
        digest = hashlib.sha256()
        for t in tokens:
            digest.update(np.ascontiguousarray(t).tobytes())
        if digest.hexdigest() != header["tokens_sha256"]:
            raise DatastoreError(f"{path}: token chunks do not match tokens_sha256 (corrupt); {rebuild}")
    vocab = int(header["vocab_size"])
    for i, t in enumerate(tokens):
        if len(t) and (int(t.min()) < 0 or int(t.max()) >= vocab):
            raise DatastoreError(f"{path / chunk_files(i)[0]}: token ids outside the vocabulary [0, {vocab}); {rebuild}")


def load_array(path: Path, name: str, meta: dict[str, Any]) -> np.ndarray:
    f = path / name
    expected = meta.get("files", {}).get(name)
    if not f.is_file():
        raise DatastoreError(f"{path}: missing file {name}")
    if expected is not None and f.stat().st_size != expected:
        raise DatastoreError(f"{path}: {name} has {f.stat().st_size} bytes, header says {expected} (truncated or corrupt)")
    try:
        return np.load(f, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise DatastoreError(f"{path}: cannot read {name}: {e}") from None


def read_header(path: Path) -> dict[str, Any]:
    """The validated ``header.json`` of a datastore directory."""
    f = Path(path) / HEADER
    if not f.is_file():
        raise DatastoreError(f"{path}: not a token datastore (no {HEADER}; build it with `specbench datastore build`)")
    try:
        header = parse_json(f.read_text(encoding="utf-8"))  # (a header nested 100k deep: a ValueError too)
    except (ValueError, OSError) as e:
        raise DatastoreError(f"{path}: unreadable {HEADER}: {e}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise DatastoreError(f"{path}: {HEADER} is not a {FORMAT} header")
    if header.get("format_version") != FORMAT_VERSION:
        raise DatastoreError(f"{path}: format version {header.get('format_version')}, expected {FORMAT_VERSION}; rebuild it")
    for key in ("vocab_size", "n_tokens", "chunks"):
        if key not in header:
            raise DatastoreError(f"{path}: {HEADER} lacks {key!r}")
    chunks = header["chunks"]
    ints = ("n_tokens", "n_entries")
    if (not isinstance(chunks, list) or not all(isinstance(c, dict) and all(isinstance(c.get(k), int) for k in ints)
                                                for c in chunks)
            or not isinstance(header["vocab_size"], int) or not isinstance(header["n_tokens"], int)):
        raise DatastoreError(f"{path}: {HEADER} is malformed (chunks must be a list of chunk entries; rebuild it)")
    return header


def dir_bytes(path: Path) -> int:
    """Total size of the regular files in ``path`` (recursively)."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def write_datastore(
    entries: Iterable[Sequence[int]],
    out: str | Path,
    *,
    vocab_size: int,
    meta: dict[str, Any],
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    chunk_hook: Any = None,
) -> dict[str, Any]:
    """Build a datastore directory from token entries; returns its header.

    Builds into a temporary sibling directory and renames it into place, so an interrupted build never
    leaves a half-written datastore. ``chunk_hook(tokens, entry_starts, sa) -> set of entry indices``
    names entries to drop from a chunk (the test-set contamination check).
    """
    out = Path(out)
    t0 = time.time()
    tmp = tmp_sibling(out)
    remove_stale_tmp(out.parent)  # what killed builds left: hundreds of MB each, never reclaimed otherwise
    tmp.mkdir(parents=True)
    digest = hashlib.sha256()
    chunks_meta: list[dict[str, Any]] = []
    max_tok = -1
    try:
        for tokens, starts in pack_chunks(entries, vocab_size, chunk_tokens):
            sa = suffix_array(tokens)
            drop = chunk_hook(tokens, starts, sa) if chunk_hook is not None else set()
            if drop:
                tokens, starts = drop_entries(tokens, starts, drop)
                sa = suffix_array(tokens)
            if len(tokens) == 0:
                continue
            i = len(chunks_meta)
            names = chunk_files(i)
            for name, arr in zip(names, (tokens, sa, starts)):
                np.save(tmp / name, arr, allow_pickle=False)
            digest.update(tokens.tobytes())
            max_tok = max(max_tok, int(tokens.max()))
            files = {n: (tmp / n).stat().st_size for n in names}
            hashes = {n: stream_sha256(tmp / n) for n in names}  # tmp path: a cache entry would never hit
            chunks_meta.append({"n_tokens": int(len(tokens)), "n_entries": int(len(starts)), "files": files,
                                "sha256": hashes})
        header = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            **meta,
            "vocab_size": int(vocab_size),
            "n_tokens": sum(c["n_tokens"] for c in chunks_meta),
            "n_entries": sum(c["n_entries"] for c in chunks_meta),
            "max_token_id": max_tok,
            "tokens_sha256": digest.hexdigest(),
            "build_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.time() - t0, 2),
            "chunks": chunks_meta,
        }
        if header["n_tokens"] == 0:
            raise DatastoreError("the corpus produced no tokens; refusing to write an empty datastore")
        (tmp / HEADER).write_text(strict_json(header, indent=1), encoding="utf-8")
        if out.exists():
            if not (out / HEADER).is_file() and any(out.iterdir()):
                raise DatastoreError(f"{out} exists and is not a datastore; refusing to overwrite it")
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return header
