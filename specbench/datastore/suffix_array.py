"""Token datastore for REST: int32 token chunks with a suffix array each, stored as ``.npy`` + JSON.

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
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from specbench.content_hash import ContentMismatch, stream_sha256, verify_sha256
from specbench.errors import DatastoreError
from specbench.jsonfile import strict_json

FORMAT = "specbench-token-datastore"
FORMAT_VERSION = 1
HEADER = "header.json"
DEFAULT_CHUNK_TOKENS = 1 << 28  # 268M tokens: a 4-byte-SA chunk of ~2 GB; ShareGPT fits in one


@dataclass(frozen=True)
class Chunk:
    """One suffix-array chunk (arrays may be memory-mapped)."""

    tokens: np.ndarray  # [n] int32
    sa: np.ndarray  # [n] int32 or int64: suffix start positions in lexicographic order
    entries: np.ndarray  # [e] int64: entry start offsets

    def __len__(self) -> int:
        return len(self.tokens)


def suffix_array(tokens: np.ndarray) -> np.ndarray:
    """Suffix array of an int32 token array (lexicographic order of ``tokens[i:]``)."""
    if len(tokens) == 0:
        return np.zeros(0, dtype=np.int32)
    from pydivsufsort import divsufsort  # lazy: keeps module import light

    sa = divsufsort(np.ascontiguousarray(tokens, dtype=np.int32))
    return sa.astype(np.int32 if len(tokens) < 2**31 else np.int64, copy=False)


class TokenDatastore:
    """Suffix-array chunks plus their header; use ``load`` or ``from_entries`` (in memory, for tests)."""

    def __init__(self, chunks: list[Chunk], header: dict[str, Any], path: Path | None = None) -> None:
        self.chunks = chunks
        self.header = header
        self.path = path
        # plain ndarray views of the memmaps: scalar indexing on np.memmap goes through Python code
        self._views = [(np.asarray(c.tokens), np.asarray(c.sa)) for c in chunks]

    # construction -----------------------------------------------------------------------------------
    @classmethod
    def from_entries(cls, entries: Iterable[Sequence[int]], vocab_size: int, chunk_tokens: int = DEFAULT_CHUNK_TOKENS) -> "TokenDatastore":
        """An in-memory datastore of token entries (same chunking rules as a build)."""
        chunks = [Chunk(t, suffix_array(t), e) for t, e in pack_chunks(entries, vocab_size, chunk_tokens)]
        header = {"format": FORMAT, "format_version": FORMAT_VERSION, "vocab_size": vocab_size,
                  "n_tokens": sum(len(c) for c in chunks), "n_entries": sum(len(c.entries) for c in chunks)}
        return cls(chunks, header)

    @classmethod
    def load(cls, path: str | Path, vocab_size: int | None = None, tokenizer_hash: str | None = None) -> "TokenDatastore":
        """Open a datastore directory memory-mapped; validate it (and the tokenizer, when given)."""
        path = Path(path)
        header = read_header(path)
        if vocab_size is not None and header.get("vocab_size") != vocab_size:
            raise DatastoreError(f"{path}: built for vocab size {header.get('vocab_size')}, model has {vocab_size}")
        if tokenizer_hash is not None and header.get("tokenizer_hash") not in (None, tokenizer_hash):
            raise DatastoreError(f"{path}: built with another tokenizer ({header.get('tokenizer_id')!r})")
        chunks = []
        for i, meta in enumerate(header["chunks"]):
            arrays = [_load_array(path, name, meta) for name in _chunk_files(i)]
            tokens, sa, entries = arrays
            n = int(meta["n_tokens"])
            if tokens.dtype != np.int32 or tokens.shape != (n,) or sa.shape != (n,) or sa.dtype.kind != "i":
                raise DatastoreError(f"{path}: chunk {i} arrays do not match the header (shape or dtype)")
            if entries.ndim != 1 or len(entries) != int(meta["n_entries"]):
                raise DatastoreError(f"{path}: chunk {i} entry table does not match the header")
            chunks.append(Chunk(tokens, sa, entries))
        if sum(len(c) for c in chunks) != header["n_tokens"]:
            raise DatastoreError(f"{path}: chunk token counts do not add up to n_tokens={header['n_tokens']}")
        verify_contents(path, header, [c.tokens for c in chunks])
        return cls(chunks, header, path)

    # properties ---------------------------------------------------------------------------------------
    @property
    def n_tokens(self) -> int:
        return int(self.header["n_tokens"])

    @property
    def vocab_size(self) -> int:
        return int(self.header["vocab_size"])

    def nbytes_on_disk(self) -> int:
        """Total bytes of the datastore directory (0 for an in-memory datastore)."""
        return dir_bytes(self.path) if self.path is not None else 0

    # search -------------------------------------------------------------------------------------------
    def count(self, query: Sequence[int]) -> int:
        """Number of occurrences of ``query`` (entirely inside a chunk)."""
        q = [int(t) for t in query]
        return sum(_bound(t, s, q, True) - _bound(t, s, q, False) for t, s in self._views)

    def exists(self, query: list[int]) -> bool:
        """Whether ``query`` occurs anywhere (one lower-bound search per chunk)."""
        for tokens, sa in self._views:
            lo = _bound(tokens, sa, query, False)
            if lo < len(sa):
                p = int(sa[lo])
                if tokens[p : p + len(query)].tolist() == query:
                    return True
        return False

    def longest_suffix_match(self, context: Sequence[int], n_max: int, n_min: int) -> int:
        """Largest s in [n_min, n_max] such that ``context[-s:]`` occurs; 0 if none.

        Occurrence is monotone in s (a match of the last s tokens contains one of the last s - 1), so
        binary search over s gives the same answer as trying s = n_max, n_max - 1, ... in turn.
        """
        hi = min(n_max, len(context))
        lo = n_min
        tail = [int(t) for t in context[-hi:]] if hi > 0 else []
        if hi < lo or any(not 0 <= t < self.vocab_size for t in tail[-lo:]):
            return 0
        best = 0
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.exists(tail[len(tail) - mid :]):
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best

    def continuations(self, query: Sequence[int], k: int, m: int, spread: bool = False) -> np.ndarray:
        """The m tokens after each of ``k`` matches of ``query``: the first k in SA order, chunk by chunk,
        or with ``spread`` k spread evenly over all matches (index ``round(i * (M - 1) / (k - 1))`` of the
        M matches in SA order, i = 0..k-1; all of them when M <= k).

        Why ``spread``: suffix-array order sorts the matches by their continuations, so with more than k
        matches the first k all continue with the smallest token ids; an even spread keeps every
        continuation's share (CREST precomputes its trees offline, where the extra search is free).
        Example: matches continuing ``[1, 1, 2, 3]`` (SA order), k = 2: first -> ``1, 1``; spread -> ``1, 3``.

        Returns int32 ``[n_matches, m]``, padded with -1 past the chunk end.
        """
        q = [int(t) for t in query]
        if any(not 0 <= t < self.vocab_size for t in q):
            return np.zeros((0, m), dtype=np.int32)
        spans = []  # (tokens, sa, lo, hi) of every chunk with matches
        for tokens, sa in self._views:
            lo = _bound(tokens, sa, q, False)
            hi = _bound(tokens, sa, q, True)
            if hi > lo:
                spans.append((tokens, sa, lo, hi))
            if not spread and sum(h - l for _, _, l, h in spans) >= k:
                break
        total = sum(h - l for _, _, l, h in spans)
        pick = None  # global match ids when spread, else the first k (plain slices)
        if spread and total > k:
            pick = np.round(np.arange(k) * ((total - 1) / max(k - 1, 1))).astype(np.int64)  # [k]
        rows: list[np.ndarray] = []
        offset, left = 0, k
        for tokens, sa, lo, hi in spans:
            if pick is None:
                mine = sa[lo : lo + min(hi - lo, left)]
                left -= len(mine)
            else:
                mine = sa[pick[(pick >= offset) & (pick < offset + hi - lo)] - offset + lo]
            offset += hi - lo
            if len(mine) == 0:
                continue
            starts = mine.astype(np.int64) + len(q)  # [r]
            idx = starts[:, None] + np.arange(m)  # [r, m]
            inside = idx < len(tokens)
            cont = tokens[np.minimum(idx, len(tokens) - 1)]
            cont[~inside] = -1
            rows.append(cont)
        if not rows:
            return np.zeros((0, m), dtype=np.int32)
        return np.concatenate(rows) if len(rows) > 1 else rows[0]


def _bound(tokens: np.ndarray, sa: np.ndarray, query: list[int], upper: bool) -> int:
    """First SA index whose suffix (cut to len(query)) is >= query (``upper``: > query).

    Python list comparison is exactly the suffix order: a shorter suffix that is a prefix of the
    query sorts before it. A scalar loop beats vectorised numpy here (about 25 steps of 1 us).
    """
    lo, hi, s = 0, len(sa), len(query)
    while lo < hi:
        mid = (lo + hi) >> 1
        p = int(sa[mid])
        window = tokens[p : p + s].tolist()
        if window < query or (upper and window == query):
            lo = mid + 1
        else:
            hi = mid
    return lo


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


def find_all(tokens: np.ndarray, sa: np.ndarray, query: Sequence[int]) -> np.ndarray:
    """Start positions of every occurrence of ``query`` in a chunk (via its suffix array)."""
    q = [int(t) for t in query]
    lo, hi = _bound(tokens, sa, q, False), _bound(tokens, sa, q, True)
    return np.sort(np.asarray(sa[lo:hi], dtype=np.int64))


def _chunk_files(i: int) -> tuple[str, str, str]:
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
        for name in _chunk_files(i):
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
            raise DatastoreError(f"{path / _chunk_files(i)[0]}: token ids outside the vocabulary [0, {vocab}); {rebuild}")


def _load_array(path: Path, name: str, meta: dict[str, Any]) -> np.ndarray:
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
        header = json.loads(f.read_text(encoding="utf-8"))
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
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
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
            names = _chunk_files(i)
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
