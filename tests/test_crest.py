"""CREST: n-gram counting equals brute force, lookups equal live REST retrieval, lossless decoding."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from specbench_methods.crest import CRESTDrafter
from specbench_methods.rest import query_tree
from specbench.cli import main
from specbench.datastore.ngram_store import NgramStore, top_ngrams, write_ngram_store
from specbench.datastore.suffix_array import DatastoreError, TokenDatastore
from specbench.datastore.token_files import write_datastore
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree
from tests.conftest import make_tiny_model


def brute_top(entries: list[list[int]], max_n: int, t: int) -> dict[int, list[tuple[tuple[int, ...], int]]]:
    out = {}
    for n in range(1, max_n + 1):
        cnt = Counter(tuple(e[i : i + n]) for e in entries for i in range(len(e) - n + 1))
        out[n] = sorted(cnt.items(), key=lambda kv: (-kv[1], kv[0]))[:t]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_top_ngrams_equal_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    entries = [rng.integers(0, 4, size=int(rng.integers(1, 15))).tolist() for _ in range(30)]
    t = int(rng.integers(1, 8))
    ds = TokenDatastore.from_entries(entries, vocab_size=4)
    assert top_ngrams(ds, 4, t) == brute_top(entries, 4, t)
    # several chunks: counts are merged across chunks (exact when the 4t candidates cover them)
    ds_multi = TokenDatastore.from_entries(entries, vocab_size=4, chunk_tokens=40)
    assert len(ds_multi.chunks) > 1
    assert top_ngrams(ds_multi, 2, 4) == brute_top(entries, 2, 4)


def _store(tmp_path, entries, top_t=50, max_n=3):
    ds = TokenDatastore.from_entries(entries, vocab_size=64)
    write_ngram_store(ds, tmp_path / "crest", top_t, max_n, k=100, m=4, c=8)
    return ds, NgramStore(tmp_path / "crest", vocab_size=64)


def test_lookup_equals_live_rest_and_prefers_longest(tmp_path) -> None:
    rng = np.random.default_rng(1)
    entries = [rng.integers(0, 6, size=20).tolist() for _ in range(20)]
    ds, store = _store(tmp_path, entries)
    keys = top_ngrams(ds, 3, 50)
    checked = 0
    for n, items in keys.items():
        for gram, _ in items:
            assert store.get(gram) == query_tree(ds, list(gram), 100, 4, 8, spread=True)
            checked += 1
    assert checked > 60 and store.header["n_keys"] == checked
    gram3 = keys[3][0][0]
    assert store.lookup([63, 62] + list(gram3)) == store.get(gram3)  # longest kept suffix wins
    assert store.lookup([63, 0]) == store.get((0,))  # backs off to the unigram
    assert store.lookup([]) is None and store.lookup([63]) is None
    assert store.nbytes_on_disk() > 0


@pytest.mark.parametrize("damage", ["missing", "garbage", "truncated"])
def test_damaged_store_raises(tmp_path, damage: str) -> None:
    _store(tmp_path, [[1, 2, 3, 1, 2, 4]])
    db = tmp_path / "crest" / "ngrams.sqlite"
    if damage == "missing":
        db.unlink()
    elif damage == "garbage":
        db.write_bytes(b"not a database" * 100)
    else:
        db.write_bytes(db.read_bytes()[:100])
    with pytest.raises(DatastoreError):
        NgramStore(tmp_path / "crest")
    with pytest.raises(DatastoreError, match="vocab"):
        _store(tmp_path / "x", [[1, 2, 3]])
        NgramStore(tmp_path / "x" / "crest", vocab_size=65)


def test_compact_command(tmp_path, capsys) -> None:
    rest = tmp_path / "rest"
    write_datastore([[1, 2, 3, 4] * 5, [2, 3, 5]], rest, vocab_size=8, meta={"corpora": ["toy"]})
    code = main(["datastore", "compact", "--from", str(rest), "--top-t", "3", "--max-n", "2", "--out", str(tmp_path / "c")])
    assert code == 0 and "smaller" in capsys.readouterr().out
    assert NgramStore(tmp_path / "c").header["top_t"] == 3
    assert main(["datastore", "compact", "--from", str(tmp_path / "nope"), "--top-t", "3", "--out", str(tmp_path / "d")]) == 2


def test_crest_lossless_on_tiny_model(tmp_path) -> None:
    model = make_tiny_model("qwen2", seed=5)
    rng = np.random.default_rng(2)
    prompts = [rng.integers(0, 64, size=10).tolist() for _ in range(3)]
    refs = [Engine(model, set()).generate(p, None, 40).output_ids for p in prompts]
    entries = [p + r for p, r in zip(prompts[:2], refs[:2])] * 3 + [rng.integers(0, 64, size=40).tolist() for _ in range(10)]
    _, store = _store(tmp_path, entries, top_t=200, max_n=4)
    drafter = CRESTDrafter(store)
    accepted = 0
    for p, ref in zip(prompts, refs):
        gen = Engine(model, set()).generate(p, drafter, 40)
        assert gen.output_ids == ref
        accepted += sum(gen.accept_lengths) - gen.forward_passes
    assert accepted > 10


@pytest.mark.embedded
def test_crest_lossless_on_embedded_model(embedded, tmp_path) -> None:
    import itertools

    from specbench.datastore.corpora import code_alpaca
    from specbench.models.loading import stop_token_ids
    from specbench.paths import default_data_dir
    from specbench.prompts.task import encode_prompt

    tok = embedded.tokenizer
    texts = list(itertools.islice(code_alpaca(default_data_dir()), 1000))
    ds = TokenDatastore.from_entries(tok(texts, add_special_tokens=False)["input_ids"], vocab_size=len(tok))
    write_ngram_store(ds, tmp_path / "crest", top_t=300, max_n=3, k=500, m=10, c=32)
    drafter = CRESTDrafter(NgramStore(tmp_path / "crest", vocab_size=len(tok)))
    engine = Engine(embedded.model, stop_token_ids(tok, embedded.model))
    prompt = encode_prompt(tok, [{"role": "user", "content": "Write a Python function that reverses a string."}])
    assert engine.generate(prompt, drafter, 48).output_ids == engine.generate(prompt, None, 48).output_ids


def test_uncut_store_holds_pure_top_c_trees(tmp_path) -> None:
    rng = np.random.default_rng(2)
    entries = [rng.integers(0, 5, size=20).tolist() for _ in range(20)]
    ds = TokenDatastore.from_entries(entries, vocab_size=64)
    write_ngram_store(ds, tmp_path / "u", 20, 2, k=100, m=4, c=8, cut=False)
    store = NgramStore(tmp_path / "u", vocab_size=64)
    assert store.header["cut"] is False
    grams = [g for items in top_ngrams(ds, 2, 20).values() for g, _ in items]
    assert all(store.get(g) == query_tree(ds, list(g), 100, 4, 8, cut=False, spread=True) for g in grams)
    assert any(query_tree(ds, list(g), 100, 4, 8, spread=True) != store.get(g) for g in grams)  # the cut changes some


def test_trees_count_matches_spread_over_all_not_the_first_k(tmp_path) -> None:
    # key 9 has 4 matches; suffix-array order sorts them by continuation: 1, 1, 2, 3. With k = 2 the
    # first two both continue with 1 (tree: just 1); spread evenly (match 0 and 3) they give 1 and 3.
    ds = TokenDatastore.from_entries([[9, 1], [9, 1], [9, 2], [9, 3]], vocab_size=10)
    assert ds.continuations([9], 2, 1).tolist() == [[1], [1]]
    assert ds.continuations([9], 2, 1, spread=True).tolist() == [[1], [3]]
    assert ds.continuations([9], 3, 1, spread=True).tolist() == [[1], [2], [3]]  # matches 0, 2 (1.5 rounds to even), 3
    assert ds.continuations([9], 9, 1, spread=True).tolist() == [[1], [1], [2], [3]]  # k >= matches: all
    write_ngram_store(ds, tmp_path / "s", top_t=10, max_n=1, k=2, m=1, c=8)
    store = NgramStore(tmp_path / "s", vocab_size=10)
    assert store.get((9,)) == DraftTree((1, 3), (-1, -1))
    assert store.header["spread"] is True


def test_spread_picks_across_chunks() -> None:
    rng = np.random.default_rng(4)
    entries = [rng.integers(0, 3, size=12).tolist() for _ in range(40)]
    many = TokenDatastore.from_entries(entries, vocab_size=3, chunk_tokens=60)
    assert len(many.chunks) > 1
    for q in ([0], [1, 2], [2, 2, 0]):
        every = many.continuations(q, 10**6, 3)  # all matches, chunk by chunk, SA order in each
        assert len(every) > 7
        pick = [round(i * (len(every) - 1) / 6) for i in range(7)]
        assert many.continuations(q, 7, 3, spread=True).tolist() == every[pick].tolist()
        assert many.continuations(q, 10**6, 3, spread=True).tolist() == every.tolist()


@pytest.mark.parametrize("version", [1, 2])
def test_old_store_versions_are_refused_with_rebuild_hint(tmp_path, version: int) -> None:
    import json
    import sqlite3

    _store(tmp_path, [[1, 2, 3, 1, 2, 4]])
    path = tmp_path / "crest"
    conn = sqlite3.connect(path / "ngrams.sqlite")
    header = json.loads(conn.execute("SELECT value FROM meta WHERE key='header'").fetchone()[0])
    conn.execute("UPDATE meta SET value=? WHERE key='header'", (json.dumps({**header, "format_version": version}),))
    conn.commit()
    conn.close()
    (path / "header.json").unlink()  # as an old store without db_sha256
    with pytest.raises(DatastoreError, match=rf"format v{version} .*rebuild it with `specbench datastore compact"):
        NgramStore(path)


def test_storage_ratios_against_both_rest_formats() -> None:
    from specbench_methods.crest import storage_ratios

    line = storage_ratios(8_000_000, 1_000_000, 400_000)
    assert "(20.0x smaller)" in line and "6,000,000 in the reference's 6 B/token format (15.0x smaller)" in line
