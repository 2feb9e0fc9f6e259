"""DReSD datastore: normalisation vs a float64 reference, entries, shards/resume, save/load, corruption."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from specbench_methods.dresd.datastore.build import BuildSettings, datastore_from_sequences, format_pair, interleave
from specbench_methods.dresd.datastore.embed import EmbedSettings, ShardStore, embed_batch, embed_corpus, next_token_values
from specbench_methods.dresd.datastore.store import DatastoreError, DenseDatastore, default_nlist
from specbench_methods.dresd.datastore.transform import fit_transform
from tests.conftest import make_tiny_model


def _reference(sample: np.ndarray, x: np.ndarray, d: int) -> np.ndarray:
    """Plain float64 numpy: z-score (ddof=1), covariance eigenvectors, top d, sign fix, L2."""
    s = sample.astype(np.float64)
    mean, std = s.mean(0), s.std(0, ddof=1)
    z = (s - mean) / std
    evals, evecs = np.linalg.eigh(z.T @ z / (len(s) - 1))
    w = evecs[:, np.argsort(-evals)[:d]]
    w = w * np.sign(w[np.abs(w).argmax(0), np.arange(d)])
    y = ((x.astype(np.float64) - mean) / std) @ w
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def test_transform_matches_float64_reference() -> None:
    rng = np.random.default_rng(0)
    mix = rng.normal(size=(48, 48)) * np.linspace(3, 0.1, 48)[:, None]  # distinct variances -> stable eigenvectors
    sample = (rng.normal(size=(2000, 48)) @ mix + rng.normal(size=48) * 5).astype(np.float32)
    t = fit_transform(sample, 16)
    assert (t.in_dim, t.out_dim) == (48, 16)
    x = sample[:100]
    y = t.apply(x)
    assert y.shape == (100, 16) and y.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(y, _reference(sample, x, 16), atol=2e-4)
    assert t.apply(x[0]).shape == (16,)
    # components never exceed the input width
    assert fit_transform(sample[:, :8], 64).out_dim == 8


def test_streamed_fit_reads_rows_in_chunks_and_matches_the_reference(monkeypatch) -> None:
    """The fit never converts more than one chunk to float64, and a row subset equals fitting its copy."""
    import specbench_methods.dresd.datastore.transform as tmod

    rng = np.random.default_rng(1)
    mix = rng.normal(size=(32, 32)) * np.linspace(3, 0.1, 32)[:, None]
    keys = (rng.normal(size=(3000, 32)) @ mix + 200.0).astype(np.float16)  # large mean: one-pass cancellation risk
    rows = np.sort(rng.choice(3000, 1000, replace=False))
    seen = []
    real = tmod._chunks

    def spy(k, r, c):
        for x in real(k, r, c):
            seen.append(x.shape[0])
            yield x

    monkeypatch.setattr(tmod, "_chunks", spy)
    t = fit_transform(keys, 8, rows, chunk_rows=64)
    assert max(seen) == 64 and sum(seen) == 1000
    x = keys[rows][:50]
    np.testing.assert_allclose(t.apply(x), _reference(keys[rows].astype(np.float32), x, 8), atol=2e-3)


def test_next_token_values_example() -> None:
    np.testing.assert_array_equal(next_token_values([5, 6, 7], 2, 0), [[6, 7], [7, 0], [0, 0]])
    assert next_token_values(list(range(30)), 20, -1)[3].tolist() == list(range(4, 24))


def test_format_and_interleave() -> None:
    assert format_pair("Q?", "A.") == "Question: Q?\nAnswer:\nA."
    assert format_pair("", "code") == "code"
    assert list(interleave([[1, 2, 3], ["a"], [10, 20]])) == [1, "a", 10, 2, 20, 3]


def test_batched_embedding_matches_single() -> None:
    model = make_tiny_model("llama", 1)
    seqs = [[1, 2, 3, 4, 5, 6], [7, 8, 9], [10, 11, 12, 13]]
    batched = embed_batch(model, seqs)
    for s, h in zip(seqs, batched):
        with torch.inference_mode():
            ref = model.base_model(input_ids=torch.tensor([s])).last_hidden_state[0].numpy()
        np.testing.assert_allclose(h, ref, atol=1e-5)


def _seqs(n: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 63, rng.integers(5, 40)).tolist() for _ in range(n)]


def test_shards_resume_equals_one_shot(tmp_path) -> None:
    model = make_tiny_model("llama", 2)
    seqs = _seqs(40)
    settings = EmbedSettings(n_next=4, max_len=30, batch_tokens=64, shard_tokens=50)
    one = ShardStore(tmp_path / "one", {"x": 1})
    n1 = embed_corpus(model, seqs, list, one, 63, 600, settings, progress=False)
    calls = []

    def dying(item: list[int]) -> list[int]:
        calls.append(1)
        if len(calls) > 15:
            raise KeyboardInterrupt  # the build is interrupted mid-shard
        return item

    with pytest.raises(KeyboardInterrupt):
        embed_corpus(model, seqs, dying, ShardStore(tmp_path / "two", {"x": 1}), 63, 600, settings, progress=False)
    resumed = ShardStore(tmp_path / "two", {"x": 1})
    assert 0 < resumed.items_done <= 15 and len(resumed.state["shards"]) >= 2
    n2 = embed_corpus(model, seqs, list, resumed, 63, 600, settings, progress=False)
    assert n1 == n2 == 600
    h1, v1 = one.load_all()
    h2, v2 = resumed.load_all()
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_allclose(h1, h2, atol=1e-5)
    with pytest.raises(Exception, match="other settings"):
        ShardStore(tmp_path / "two", {"x": 2})


def _tiny_store(model=None, **kw) -> DenseDatastore:
    model = model or make_tiny_model("llama", 3)
    return datastore_from_sequences(model, _seqs(20, 1), 63, BuildSettings(n_components=8, n_next=6, **kw))


def test_save_load_round_trip(tmp_path) -> None:
    ds = _tiny_store()
    ds.save(tmp_path / "ds")
    back = DenseDatastore.load(tmp_path / "ds")
    np.testing.assert_array_equal(back.keys, ds.keys)
    np.testing.assert_array_equal(back.values, ds.values)
    np.testing.assert_array_equal(back.transform.components, ds.transform.components)
    assert back.header["n_entries"] == len(ds) and back.header["key_dim"] == 8 and back.header["hidden_size"] == 32
    assert back.digest == ds.digest
    q = ds.keys[:5]
    assert (back.search(q, 7)[1] == ds.search(q, 7)[1]).all()
    assert (back.search(q, 1)[1][:, 0] == np.arange(5)).all()  # each key finds itself


def test_ivf_index_is_used_and_close_to_exact(tmp_path) -> None:
    rng = np.random.default_rng(0)
    assert default_nlist(100) == 0 and default_nlist(100_000) == 1264
    model = make_tiny_model("llama", 4)
    seqs = [rng.integers(0, 63, 200).tolist() for _ in range(60)]
    ds = datastore_from_sequences(model, seqs, 63, BuildSettings(n_components=16, n_next=4, nlist=16))
    assert ds.header["index"] == {"type": "IndexIVFFlat", "nlist": 16}
    ds.save(tmp_path / "ivf")
    ds = DenseDatastore.load(tmp_path / "ivf")
    q = ds.keys[::97]
    exact = ds.search(q, 10, exact=True)[1]
    assert (ds.search(q, 10, nprobe=16)[1] == exact).all()  # probing every list is exact
    approx = ds.search(q, 10, nprobe=2)[1]
    assert np.mean([len(set(a) & set(b)) / 10 for a, b in zip(approx, exact)]) > 0.3


def test_corrupt_or_incomplete_datastore_is_a_clear_error(tmp_path) -> None:
    ds = _tiny_store()
    path = ds.save(tmp_path / "ds")
    with pytest.raises(DatastoreError, match="no header.json"):
        DenseDatastore.load(tmp_path / "nothing")
    values = np.load(path / "values.npy")
    values[0, 0] += 1
    np.save(path / "values.npy", values)
    with pytest.raises(DatastoreError, match="values.npy does not match its checksum"):
        DenseDatastore.load(path)
    ds.save(path)
    (path / "index.faiss").unlink()
    with pytest.raises(DatastoreError, match="missing index.faiss"):
        DenseDatastore.load(path)
    ds.save(path)
    (path / "header.json").write_text("{not json")
    with pytest.raises(DatastoreError, match="corrupt header"):
        DenseDatastore.load(path)
    ds.save(path)
    header = json.loads((path / "header.json").read_text())
    header["version"] = 99
    (path / "header.json").write_text(json.dumps(header))
    with pytest.raises(DatastoreError, match="format version 99"):
        DenseDatastore.load(path)


class _FakeTokenizer:
    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)


def test_mismatched_model_or_tokenizer_is_a_clear_error(tmp_path) -> None:
    model = make_tiny_model("llama", 3)
    tok = _FakeTokenizer({f"t{i}": i for i in range(64)})
    ds = datastore_from_sequences(model, _seqs(10), 63, BuildSettings(n_components=8, n_next=4), tokenizer=tok)
    ds.check_compatible(model, tok)  # fine
    other = make_tiny_model("gpt2", 0)  # hidden 32 too, so compare against a wider model
    from transformers import LlamaConfig, LlamaForCausalLM

    wide = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=48, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=4, num_key_value_heads=2))
    with pytest.raises(DatastoreError, match="hidden size 32 but the target model has 48"):
        ds.check_compatible(wide, tok)
    with pytest.raises(DatastoreError, match="different tokenizer"):
        ds.check_compatible(model, _FakeTokenizer({f"u{i}": i for i in range(64)}))
    with pytest.raises(DatastoreError, match="vocabulary size"):
        ds.check_compatible(make_tiny_model("llama", 0, vocab=80), tok)
    ds.check_compatible(other, tok)  # same shapes, other weights: only a warning


def test_unknown_corpus_is_a_config_error(tmp_path) -> None:
    from specbench.errors import ConfigError
    from specbench_methods.dresd.datastore.build import build_datastore

    tok = _FakeTokenizer({"a": 0})
    tok.eos_token_id = 0
    with pytest.raises(ConfigError, match="corpus 'nope'"):
        build_datastore(make_tiny_model("llama", 0), tok, ["nope"], tmp_path / "ds", 100)
    assert not (tmp_path / "ds").exists()
