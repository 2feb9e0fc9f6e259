"""CREST's compact datastore: the most frequent n-grams of a REST datastore, each with its REST tree.

Counting: all n-grams with n = 1..max_n that lie inside one corpus entry, counted from each chunk's
suffix array (equal n-grams are adjacent in it). "Combined top-t": the t most frequent n-grams of
every n are kept (up to max_n * t keys), ties broken by token ids (suffix-array order). With several chunks, the
per-chunk top 4t candidates are merged by summed counts (exact for a single chunk, the default up to
2^28 tokens).

Trees are REST trees pruned with the reference retriever's rule (``cut_to_choices``) unless built with
``cut=False``; the header records which. Each tree counts the continuations of k matches spread evenly
over all the key's matches (``TokenDatastore.continuations(..., spread=True)``), not the first k in
suffix-array order, which for a key with more than k matches all continue with the smallest token ids.
Stores of format versions 1 (before the cut) and 2 (first-k trees) are refused with a rebuild hint.

Storage (format version 3): a directory with ``ngrams.sqlite`` (table ``trees``: ``ngram`` BLOB PRIMARY
KEY of little-endian int32 ids, ``n``, ``count``, ``tokens`` int32 BLOB, ``parents`` int16 BLOB; table
``meta`` with the JSON header) and a copy of the header as ``header.json``. Opening costs O(1) memory;
a lookup is one indexed B-tree probe per n.
"""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from specbench.datastore.suffix_array import DatastoreError, TokenDatastore
from specbench.datastore.token_files import dir_bytes
from specbench.engine.tree import DraftTree
from specbench.files.content_hash import ContentMismatch, file_sha256, verify_sha256
from specbench.files.jsonfile import parse_json, strict_json
from specbench.files.stale_tmp import remove_stale_tmp, tmp_sibling

FORMAT = "specbench-crest-ngrams"
FORMAT_VERSION = 3
DB = "ngrams.sqlite"


def count_ngrams_chunk(tokens: np.ndarray, sa: np.ndarray, entries: np.ndarray, max_n: int, top: int) -> dict[int, list[tuple[tuple[int, ...], int]]]:
    """Per n: the ``top`` most frequent in-entry n-grams of one chunk as (ngram, count), count desc."""
    tokens = np.asarray(tokens)
    n_tok = len(tokens)
    sa64 = np.asarray(sa, dtype=np.int64)
    ends = np.append(np.asarray(entries, dtype=np.int64)[1:], n_tok)
    entry_of = np.searchsorted(entries, sa64, side="right") - 1  # [N] entry of each suffix (SA order)
    room = ends[entry_of] - sa64  # [N] tokens left in the suffix's entry
    del entry_of
    # first_diff[i]: first offset j < max_n where suffix i and i-1 differ (max_n when equal)
    first_diff = np.full(n_tok, max_n, dtype=np.int8)
    first_diff[0] = -1
    for j in range(max_n):
        idx = sa64 + j
        col = np.where(idx < n_tok, tokens[np.minimum(idx, n_tok - 1)], -1)  # [N]
        neq = col[1:] != col[:-1]
        upd = (first_diff[1:] == max_n) & neq
        first_diff[1:][upd] = j
        del idx, col, neq, upd
    out: dict[int, list[tuple[tuple[int, ...], int]]] = {}
    for n in range(1, max_n + 1):
        starts = np.flatnonzero(first_diff < n)  # [G] group starts
        valid = room >= n  # [N]
        counts = np.add.reduceat(valid.astype(np.int64), starts)  # [G]
        good = np.flatnonzero(counts > 0)
        pick = good[np.lexsort((starts[good], -counts[good]))[:top]]
        valid_rows = np.flatnonzero(valid)
        rep = valid_rows[np.searchsorted(valid_rows, starts[pick])]  # first valid suffix of each group
        grams = [tuple(tokens[p : p + n].tolist()) for p in sa64[rep]]
        out[n] = list(zip(grams, counts[pick].tolist()))
    return out


def top_ngrams(ds: TokenDatastore, max_n: int, top_t: int) -> dict[int, list[tuple[tuple[int, ...], int]]]:
    """The combined top-t n-grams of a datastore for n = 1..max_n (count desc, deterministic)."""
    if len(ds.chunks) == 1:
        c = ds.chunks[0]
        return count_ngrams_chunk(c.tokens, c.sa, c.entries, max_n, top_t)
    merged: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in range(1, max_n + 1)}
    for c in ds.chunks:
        for n, items in count_ngrams_chunk(c.tokens, c.sa, c.entries, max_n, 4 * top_t).items():
            for gram, cnt in items:
                merged[n][gram] = merged[n].get(gram, 0) + cnt
    # ties by the n-gram's token ids, which is the suffix-array order a single chunk uses
    return {n: sorted(merged[n].items(), key=lambda kv: (-kv[1], kv[0]))[:top_t] for n in merged}


def _key(gram: Sequence[int]) -> bytes:
    return np.asarray(gram, dtype="<i4").tobytes()


def write_ngram_store(
    ds: TokenDatastore, out: str | Path, top_t: int, max_n: int, k: int, m: int, c: int, meta: dict[str, Any] | None = None,
    cut: bool = True,
) -> dict[str, Any]:
    """Count, select, precompute REST trees and write the SQLite store; returns the header."""
    from tqdm import tqdm

    from specbench.datastore.trie import query_tree

    t0 = time.time()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    db = out / DB
    tmp = tmp_sibling(db)
    remove_stale_tmp(out)  # a killed build's database (and its journal)
    grams = top_ngrams(ds, max_n, top_t)
    total = sum(len(v) for v in grams.values())
    conn = sqlite3.connect(tmp)
    try:
        conn.execute("CREATE TABLE trees (ngram BLOB PRIMARY KEY, n INTEGER, count INTEGER, tokens BLOB, parents BLOB) WITHOUT ROWID")
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        rows = []
        with tqdm(total=total, desc="CREST trees", unit=" ngram", mininterval=1.0) as bar:
            for n in sorted(grams):
                for gram, cnt in grams[n]:
                    tree = query_tree(ds, list(gram), k, m, c, cut, spread=True)
                    bar.update(1)
                    if tree is None or len(tree) == 0:
                        continue
                    rows.append((_key(gram), n, cnt, np.asarray(tree.tokens, "<i4").tobytes(), np.asarray(tree.parents, "<i2").tobytes()))
        conn.executemany("INSERT INTO trees VALUES (?, ?, ?, ?, ?)", rows)
        header = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            **(meta or {}),
            "top_t": top_t,
            "max_n": max_n,
            "k": k,
            "m": m,
            "c": c,
            "cut": cut,
            "spread": True,
            "vocab_size": ds.vocab_size,
            "tokenizer_id": ds.header.get("tokenizer_id"),
            "tokenizer_hash": ds.header.get("tokenizer_hash"),
            "source_tokens": ds.n_tokens,
            "source_tokens_sha256": ds.header.get("tokens_sha256"),
            "n_keys": len(rows),
            "keys_per_n": {str(n): sum(1 for r in rows if r[1] == n) for n in grams},
            "build_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.time() - t0, 2),
        }
        conn.execute("INSERT INTO meta VALUES ('header', ?)", (strict_json(header),))
        conn.commit()
        conn.execute("VACUUM")
    finally:
        conn.close()
    os.replace(tmp, db)
    header = {**header, "db_sha256": file_sha256(db)}  # only the header.json copy: the db cannot hash itself
    (out / "header.json").write_text(strict_json(header, indent=1), encoding="utf-8")
    return header


def verify_db(path: Path) -> None:
    """The SQLite file against ``header.json``'s ``db_sha256`` (streamed); stores built before
    that field get SQLite's own page check instead."""
    rebuild = f"rebuild it with `specbench datastore compact` (or delete {path})"
    try:
        expected = parse_json((path / "header.json").read_text(encoding="utf-8")).get("db_sha256")
    except (OSError, ValueError, AttributeError):
        expected = None
    if expected is not None:
        try:
            verify_sha256(path / DB, str(expected), "header.json's db_sha256")
        except ContentMismatch as e:
            raise DatastoreError(f"{e} (corrupt); {rebuild}") from None
        return
    try:
        conn = sqlite3.connect(f"file:{path / DB}?mode=ro", uri=True)
        try:
            ok = conn.execute("PRAGMA quick_check").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        raise DatastoreError(f"{path / DB}: corrupt CREST datastore ({e}); {rebuild}") from None
    if not ok or ok[0] != "ok":
        raise DatastoreError(f"{path / DB}: corrupt CREST datastore ({ok[0] if ok else 'no answer'}); {rebuild}")


class NgramStore:
    """A read-only CREST store: ``lookup(context)`` returns the tree of its longest suffix that is a key."""

    def __init__(self, path: str | Path, vocab_size: int | None = None, tokenizer_hash: str | None = None) -> None:
        self.path = Path(path)
        db = self.path / DB
        if not db.is_file():
            raise DatastoreError(f"{self.path}: not a CREST datastore (no {DB}; build it with `specbench datastore compact`)")
        verify_db(self.path)
        try:
            self.conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
            row = self.conn.execute("SELECT value FROM meta WHERE key='header'").fetchone()
            self.conn.execute("SELECT ngram FROM trees LIMIT 1").fetchall()
            header = parse_json(row[0]) if row else None
        except (sqlite3.DatabaseError, ValueError, TypeError) as e:
            raise DatastoreError(f"{self.path}: corrupt CREST datastore ({e})") from None
        old = {1: "trees without the reference cut", 2: "trees from the first k matches, not spread over all"}
        if isinstance(header, dict) and header.get("format") == FORMAT and header.get("format_version") in old:
            v = header["format_version"]
            raise DatastoreError(f"{self.path}: CREST store format v{v} ({old[v]}); rebuild it with "
                                 f"`specbench datastore compact --from <REST dir> --out <dir>` or delete it (runs rebuild it)")
        if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
            raise DatastoreError(f"{self.path}: not a {FORMAT} v{FORMAT_VERSION} datastore; rebuild it")
        if vocab_size is not None and header.get("vocab_size") != vocab_size:
            raise DatastoreError(f"{self.path}: built for vocab size {header.get('vocab_size')}, model has {vocab_size}")
        if tokenizer_hash is not None and header.get("tokenizer_hash") not in (None, tokenizer_hash):
            raise DatastoreError(f"{self.path}: built with another tokenizer ({header.get('tokenizer_id')!r})")
        self.header = header
        self.max_n = int(header["max_n"])
        self.vocab_size = int(header["vocab_size"])

    def get(self, gram: Sequence[int]) -> DraftTree | None:
        """The stored tree of exactly ``gram`` (None when it is not a key)."""
        try:
            row = self.conn.execute("SELECT tokens, parents FROM trees WHERE ngram=?", (_key(gram),)).fetchone()
        except (sqlite3.DatabaseError, OverflowError) as e:
            raise DatastoreError(f"{self.path}: lookup failed ({e})") from None
        if row is None:
            return None
        tokens = np.frombuffer(row[0], "<i4")
        if len(tokens) and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise DatastoreError(f"{self.path / DB}: token ids outside the vocabulary [0, {self.vocab_size}); "
                                 "rebuild it with `specbench datastore compact`")
        return DraftTree(tuple(tokens.tolist()), tuple(np.frombuffer(row[1], "<i2").tolist()))

    def lookup(self, context: Sequence[int], max_n: int | None = None) -> DraftTree | None:
        """Tree of the longest suffix of ``context`` (ending with the root) that is a key, n = max_n..1."""
        top = min(max_n or self.max_n, self.max_n, len(context))
        for n in range(top, 0, -1):
            gram = context[len(context) - n :]
            if any(not 0 <= int(t) < 2**31 for t in gram):
                continue
            tree = self.get(gram)
            if tree is not None:
                return tree
        return None

    def nbytes_on_disk(self) -> int:
        return dir_bytes(self.path)

    def close(self) -> None:
        self.conn.close()
