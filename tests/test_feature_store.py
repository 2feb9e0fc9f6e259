"""The shared feature store on tiny random models: batched teacher forcing equals one sequence per forward,
the trainer's view equals the per-sequence collection it replaces, shards resume and extend as prefixes,
a fixed held-out set, and one-line errors."""
from __future__ import annotations

import json

import pytest
import torch

import specbench.training.feature_collect as feature_collect
from conftest import make_tiny_model
from specbench.datastore import corpora
from specbench.errors import ConfigError
from specbench.training.distill_data import interleave, sequence_ids
from specbench.training.feature_collect import forward_batch, length_batches
from specbench.training.feature_store import FeatureOptions, FeatureStore
from test_golden import char_tokenizer

CORPUS = "tiny_feature_store"
TEXTS = [("" if i % 3 == 0 else f"q{i} ab", "abc def gh " * (1 + i % 5) + "xyz"[: i % 4]) for i in range(60)]
corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: iter(TEXTS))
corpora.PAIR_LOADERS.setdefault("tiny_feature_short", lambda data_dir: iter(TEXTS[:5]))


def _open(model, tmp_path, **kw) -> FeatureStore:
    return FeatureStore.open(model, char_tokenizer(), [CORPUS], None, model_id="tiny", max_seq_len=40,
                             root=tmp_path, **kw)


def test_length_batches_sort_longest_first_within_the_budget() -> None:
    assert length_batches([300, 40, 280, 50], 700) == [[0, 2], [3, 1]]
    assert length_batches([900, 10], 700) == [[0], [1]]  # longer than the budget: a batch of its own
    assert length_batches([5, 5, 5], 10) == [[0, 1], [2]]


@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2", "neox"])
def test_batched_features_equal_one_sequence_features(family: str) -> None:
    model, tok = make_tiny_model(family), char_tokenizer()
    seqs = [sequence_ids(tok, p, r, 40) for p, r in TEXTS[:7]]
    together = forward_batch(model, seqs, (0, 2))
    for (ids, start), (hid, lab, states) in zip(seqs, together):
        (hid1, lab1, states1), = forward_batch(model, [(ids, start)], (0, 2))
        assert hid.shape == (len(ids) - start, 32) and hid.dtype == torch.float16
        torch.testing.assert_close(hid.float(), hid1.float(), atol=2e-3, rtol=2e-3)
        torch.testing.assert_close(states.float(), states1.float(), atol=2e-3, rtol=2e-3)
        with torch.no_grad():
            logits = model.get_output_embeddings()(model.base_model(input_ids=torch.tensor([ids])).last_hidden_state[0])
        top2 = logits[start:].topk(2).values
        clear = (top2[:, 0] - top2[:, 1]) > 1e-4  # labels agree except on (near) ties
        assert torch.equal(lab[clear], lab1[clear]) and torch.equal(lab.long()[clear], logits[start:].argmax(-1)[clear])


def _reference_examples(model, n_predict: int, positions: int, every: int) -> tuple[list, list]:
    """The per-sequence collection the store replaced: one forward per sequence, starts counted as before."""
    tok, train, held, got = char_tokenizer(), [], [], 0
    for i, (p, r) in enumerate(interleave([CORPUS], None)):
        ids, start = sequence_ids(tok, p, r, 40)
        last = len(ids) - n_predict - 2
        if last < start:
            continue
        with torch.no_grad():
            h = model.base_model(input_ids=torch.tensor([ids])).last_hidden_state[0]
        am = model.get_output_embeddings()(h).argmax(-1)
        for t in range(start, last + 1):
            (held if i % every == every - 1 else train).append((ids[t + 1], int(am[t + 1]), h[t]))
        got += last + 1 - start
        if got >= positions:
            return train, held
    raise AssertionError("corpus too small for the test")


@pytest.mark.parametrize("n_predict", [1, 4])
def test_the_trainers_view_equals_the_per_sequence_collection(tmp_path, n_predict: int) -> None:
    model = make_tiny_model("llama", seed=4)
    data = _open(model, tmp_path).data(300, n_predict, heldout_every=4, progress=False)
    train, held = _reference_examples(model, n_predict, 300, 4)
    for starts, ref in ((data.train_starts, train), (data.heldout_starts, held)):
        assert len(starts) == len(ref)
        assert data.tokens[starts + 1].tolist() == [t for t, _, _ in ref]
        assert data.argmax[starts + 1].tolist() == [a for _, a, _ in ref]
        torch.testing.assert_close(data.hidden[starts].float(), torch.stack([h for _, _, h in ref]), atol=2e-3, rtol=2e-3)


def test_interrupted_collection_resumes_and_a_larger_store_extends_the_smaller(tmp_path, monkeypatch) -> None:
    model = make_tiny_model("llama", seed=5)
    monkeypatch.setattr(feature_collect, "SHARD_POSITIONS", 60)
    monkeypatch.setattr(feature_collect, "WINDOW", 4)
    monkeypatch.setattr(feature_collect, "TOKEN_BUDGET", 80)  # two sequences per forward at most
    whole = _open(model, tmp_path / "whole").data(400, 1, progress=False)
    small = _open(model, tmp_path / "small").data(150, 1, progress=False)
    n = len(small.tokens)
    assert torch.equal(whole.tokens[:n], small.tokens) and torch.equal(whole.argmax[:n], small.argmax)
    assert torch.equal(whole.train_starts[: len(small.train_starts)], small.train_starts)

    calls, real = {"n": 0}, feature_collect.forward_batch

    def interrupted(*a, **k):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(feature_collect, "forward_batch", interrupted)
    store = _open(model, tmp_path / "resumed")
    with pytest.raises(KeyboardInterrupt):
        store.data(400, 1, progress=False)
    kept = store.index
    assert kept.shards  # finished shards survive the interruption
    assert json.loads((store.path / f"{kept.shards[-1].name}.json").read_text())["cursor"] == kept.cursor
    resumed = store.data(400, 1, progress=False)
    after = store.index.shards
    assert after[: len(kept.shards)] == kept.shards and len(after) > len(kept.shards)  # continued from the cursor
    assert torch.equal(resumed.tokens, whole.tokens) and torch.equal(resumed.train_starts, whole.train_starts)
    torch.testing.assert_close(resumed.hidden.float(), whole.hidden.float(), atol=2e-3, rtol=2e-3)


def test_a_second_reader_runs_no_forward_and_reads_a_fixed_heldout_set(tmp_path) -> None:
    model = make_tiny_model("llama", seed=6)
    _open(model, tmp_path).data(500, 4, heldout_every=5, progress=False)
    again = _open(model, tmp_path)
    small = again.data(100, 1, heldout_every=5, heldout_span=500, heldout_cap=60, progress=False)
    large = again.data(400, 1, heldout_every=5, heldout_span=500, heldout_cap=60, progress=False)
    assert again.forwards == 0  # n_predict 1 <= 4: the first reader's collection covers it
    assert 60 <= len(small.heldout_starts) == len(large.heldout_starts) < 60 + 40
    assert torch.equal(small.tokens[small.heldout_starts + 1], large.tokens[large.heldout_starts + 1])
    assert len(small.train_starts) < len(large.train_starts)


def test_running_out_of_corpora_is_one_line(tmp_path) -> None:
    store = FeatureStore.open(make_tiny_model("llama"), char_tokenizer(), ["tiny_feature_short"], None,
                              model_id="tiny", max_seq_len=40, root=tmp_path)
    with pytest.raises(ConfigError, match=r"^feature store: corpora tiny_feature_short ran out after \d+ positions"):
        store.data(10_000, 1, progress=False)
    assert store.index.exhausted


def test_the_key_names_the_store_and_separates_teachers(tmp_path) -> None:
    model = make_tiny_model("llama")
    fp32, bf16 = _open(model, tmp_path), _open(model, tmp_path, teacher_dtype="bfloat16")
    deep = _open(model, tmp_path, layers=(0, 1))
    assert fp32.path.name.startswith(f"tiny-{CORPUS}-40-") and bf16.path.name.startswith(f"tiny-{CORPUS}-40-bf16-")
    assert len({fp32.path, bf16.path, deep.path, _open(make_tiny_model("llama", seed=9), tmp_path).path}) == 4
    assert json.loads((deep.path / "key.json").read_text())["layers"] == [0, 1]
    data = bf16.data(50, 1, progress=False)
    assert data.hidden.dtype == torch.float16 and data.layer_states is None
    assert deep.data(50, 1, progress=False).layer_states.shape[1:] == (2, 32)
    with pytest.raises(ConfigError, match="teacher_dtype"):
        FeatureOptions(teacher_dtype="float16").validate()


def test_doctests_of_the_training_modules() -> None:
    import doctest
    import importlib

    for name in ("specbench.training.feature_collect", "specbench.training.feature_view", "specbench.training.recipes",
                 "specbench.training.trainer_args", "specbench.training.curve", "specbench.training.labelled_sequences",
                 "specbench_methods.redrafter.vocab", "specbench_methods.hydra.train"):
        mod = importlib.import_module(name)
        assert doctest.testmod(mod).failed == 0, name
