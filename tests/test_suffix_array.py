"""Suffix-array datastore: retrieval equals brute force; the on-disk format fails cleanly when damaged."""
from __future__ import annotations

import json

import numpy as np
import pytest

from specbench.datastore.suffix_array import DatastoreError, TokenDatastore
from specbench.datastore.token_files import pack_chunks, write_datastore
from specbench.datastore.trie import top_nodes

VOCAB = 6


def brute_matches(chunks: list[np.ndarray], query: list[int], k: int, m: int) -> list[list[int]]:
    """Continuations of every match (chunk order, then suffix order), -1 padded, first k."""
    out = []
    for toks in chunks:
        found = []
        for p in range(len(toks) - len(query) + 1):
            if toks[p : p + len(query)].tolist() == query:
                cont = toks[p + len(query) : p + len(query) + m].tolist()
                found.append((toks[p:].tolist(), cont + [-1] * (m - len(cont))))
        found.sort(key=lambda x: x[0])
        out.extend(c for _, c in found)
    return out[:k]


def random_entries(rng: np.random.Generator, n_entries: int) -> list[list[int]]:
    return [rng.integers(0, VOCAB, size=int(rng.integers(1, 30))).tolist() for _ in range(n_entries)]


@pytest.mark.parametrize("seed", range(6))
def test_retrieval_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    entries = random_entries(rng, 40)
    ds = TokenDatastore.from_entries(entries, VOCAB, chunk_tokens=100)
    chunks = [np.asarray(c.tokens) for c in ds.chunks]
    assert len(chunks) > 1 and all(len(c) <= 100 for c in chunks)
    assert sum(map(len, chunks)) == sum(map(len, entries))
    for _ in range(40):
        q = rng.integers(0, VOCAB, size=int(rng.integers(1, 5))).tolist()
        k, m = int(rng.integers(1, 20)), int(rng.integers(1, 6))
        got = ds.continuations(q, k, m)
        assert got.tolist() == brute_matches(chunks, q, k, m)
        assert ds.count(q) == len(brute_matches(chunks, q, 10**9, 1))
    # longest matching suffix equals trying s = n_max .. n_min in turn
    for _ in range(40):
        ctx = rng.integers(0, VOCAB, size=20).tolist()
        expect = next((s for s in range(8, 1, -1) if brute_matches(chunks, ctx[-s:], 1, 1)), 0)
        assert ds.longest_suffix_match(ctx, 8, 2) == expect


def test_entries_never_span_chunks_and_long_entries_split() -> None:
    packed = list(pack_chunks([[1] * 7, [2] * 4, [3] * 25], vocab_size=4, chunk_tokens=10))
    assert [t.tolist() for t, _ in packed] == [[1] * 7, [2] * 4, [3] * 10, [3] * 10, [3] * 5]
    assert all(s.tolist() == [0] for _, s in packed)


def test_match_only_at_chunk_end_is_clipped() -> None:
    ds = TokenDatastore.from_entries([[0, 1, 2, 3], [4, 5]], vocab_size=8, chunk_tokens=4)
    assert ds.continuations([2, 3], k=10, m=3).tolist() == [[-1, -1, -1]]
    assert ds.continuations([1, 2], k=10, m=3).tolist() == [[3, -1, -1]]
    assert ds.continuations([3, 4], k=10, m=3).shape == (0, 3)  # would span two chunks: no match
    assert ds.longest_suffix_match([9, 0, 1, 2, 3], 16, 2) == 4


def test_empty_datastore_and_out_of_vocab_queries() -> None:
    ds = TokenDatastore.from_entries([], vocab_size=8)
    assert ds.n_tokens == 0 and ds.continuations([1, 2], 5, 3).shape == (0, 3)
    assert ds.longest_suffix_match([1, 2, 3], 16, 2) == 0
    ds = TokenDatastore.from_entries([[1, 2, 3]], vocab_size=8)
    assert ds.continuations([1, 99], 5, 3).shape == (0, 3)
    assert ds.longest_suffix_match([1, 2, 99], 16, 2) == 0
    assert ds.longest_suffix_match([99, 1, 2], 16, 2) == 2
    with pytest.raises(DatastoreError, match="outside the vocabulary"):
        TokenDatastore.from_entries([[1, 8]], vocab_size=8)


def _write(tmp_path, entries=None, **kw):
    entries = entries if entries is not None else [[1, 2, 3, 4], [2, 3, 5], [1, 2, 3, 6]]
    out = tmp_path / "ds"
    write_datastore(entries, out, vocab_size=8, meta={"corpora": ["toy"]}, chunk_tokens=kw.get("chunk_tokens", 8))
    return out


def test_roundtrip_memory_mapped(tmp_path) -> None:
    out = _write(tmp_path)
    ds = TokenDatastore.load(out, vocab_size=8)
    assert isinstance(ds.chunks[0].tokens, np.memmap)
    assert ds.n_tokens == 11 and ds.header["corpora"] == ["toy"] and ds.header["n_entries"] == 3
    assert ds.continuations([2, 3], 10, 1).tolist() == [[4], [5], [6]] and ds.count([2, 3]) == 3
    assert ds.nbytes_on_disk() > 0
    with pytest.raises(DatastoreError, match="vocab size"):
        TokenDatastore.load(out, vocab_size=9)
    with pytest.raises(DatastoreError, match="empty"):
        write_datastore([], tmp_path / "empty", vocab_size=8, meta={})


@pytest.mark.parametrize("damage", ["missing_header", "bad_json", "truncated", "missing_file", "garbage_npy", "version", "count"])
def test_damaged_datastore_raises_datastore_error(tmp_path, damage: str) -> None:
    out = _write(tmp_path)
    tok = out / "chunk_000.tokens.npy"
    if damage == "missing_header":
        (out / "header.json").unlink()
    elif damage == "bad_json":
        (out / "header.json").write_text("{not json")
    elif damage == "truncated":
        tok.write_bytes(tok.read_bytes()[:-8])
    elif damage == "missing_file":
        (out / "chunk_000.sa.npy").unlink()
    elif damage == "garbage_npy":
        tok.write_bytes(b"x" * tok.stat().st_size)
    else:
        h = json.loads((out / "header.json").read_text())
        if damage == "version":
            h["format_version"] = 99
        else:
            h["n_tokens"] += 1
        (out / "header.json").write_text(json.dumps(h))
    with pytest.raises(DatastoreError):
        TokenDatastore.load(out)
    assert issubclass(DatastoreError, ValueError)


def test_trie_on_retrieved_continuations_is_deterministic() -> None:
    ds = TokenDatastore.from_entries([[1, 2, 3], [1, 2, 4], [1, 2, 3], [1, 5]], vocab_size=8)
    trees = {top_nodes(ds.continuations([1], 100, 2), 3) for _ in range(3)}
    assert len(trees) == 1
    (tree,) = trees
    assert tree.tokens[:2] == (2, 3)
