"""DReSD drafter: first-token filtering and draft extraction, and losslessness vs AR."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from specbench_methods.dresd.config import DReSDConfig
from specbench_methods.dresd.drafter import DReSDDrafter, select_drafts
from specbench.errors import ConfigError
from specbench.config.coerce import from_dict
from specbench_methods.dresd.datastore.build import BuildSettings, datastore_from_sequences
from specbench_methods.dresd.datastore.store import DenseDatastore
from specbench_methods.dresd.datastore.transform import DenseTransform
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from tests.conftest import make_tiny_model


def test_select_drafts_filters_on_root_in_similarity_order() -> None:
    values = np.array([
        [7, 1, 2, 3],
        [9, 4, 4, 4],
        [7, 1, 5, 6],
        [7, 8, 0, 0],  # 0 = EOS: the chain stops after it
        [7, 2, 2, 2],
    ], dtype=np.int32)
    ids = np.array([2, 1, 0, 3, 4, -1])  # best first; -1 = no neighbour
    assert select_drafts(values, ids, 7, 10, 2, 0) == [[1, 5], [1, 2], [8, 0], [2, 2]]
    assert select_drafts(values, ids, 7, 2, 3, 0) == [[1, 5, 6], [1, 2, 3]]  # first D survivors
    assert select_drafts(values, ids, 9, 10, 3, 0) == [[4, 4, 4]]
    assert select_drafts(values, ids, 5, 10, 3, 0) == []


def _hand_built() -> DenseDatastore:
    """Keys are basis directions of a 4-d space; the transform is the identity (+ L2)."""
    eye = np.eye(4, dtype=np.float32)
    transform = DenseTransform(np.zeros(4, np.float32), np.ones(4, np.float32), eye)
    keys = np.array([[1, 0, 0, 0], [0.9, 0.1, 0, 0], [0, 1, 0, 0], [0.8, 0, 0.2, 0]], dtype=np.float32)
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    values = np.array([[3, 10, 11, 12], [3, 20, 21, 22], [3, 30, 31, 32], [4, 40, 41, 42]], dtype=np.int32)
    return DenseDatastore(keys, values, transform, {"eos_id": 0, "index": {"nlist": 0}})


def test_drafter_on_hand_built_datastore() -> None:
    ds = _hand_built()
    dr = DReSDDrafter(ds, num_drafts=2, draft_len=2, k=4, exact=True)
    hidden = torch.tensor([1.0, 0.05, 0.0, 0.0])
    tree = dr.propose(DraftContext([1, 2, 3], 1, hidden, max_depth=10))
    # neighbours by similarity: 0, 1, 3 (value[0] 4: dropped), 2; first D=2 survivors -> chains of rows 0, 1
    assert tree.tokens == (10, 11, 20, 21) and tree.parents == (-1, 0, -1, 2)
    # max_depth bounds the chain length; a root no neighbour continues gives no draft
    assert dr.propose(DraftContext([1, 2, 3], 1, hidden, max_depth=1)).tokens == (10, 20)
    assert dr.propose(DraftContext([1, 2, 5], 1, hidden, max_depth=10)) is None
    dr4 = DReSDDrafter(ds, num_drafts=10, draft_len=3, k=4, exact=True)
    assert dr4.propose(DraftContext([9, 4], 1, hidden, max_depth=10)).tokens == (40, 41, 42)


def test_config_validation() -> None:
    cfg = from_dict(DReSDConfig, {"num_drafts": "3", "draft_len": "6", "exact": "true"})
    assert (cfg.num_drafts, cfg.draft_len, cfg.exact) == (3, 6, True)
    assert cfg.corpus_for("humaneval") == "code_alpaca" and cfg.corpus_for("other") == "sharegpt"
    with pytest.raises(ConfigError):
        from_dict(DReSDConfig, {"k": "0"})
    with pytest.raises(ConfigError):
        from_dict(DReSDConfig, {"depth": "3"})


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_dresd_lossless_on_tiny_model(family: str) -> None:
    model = make_tiny_model(family, 5)
    engine = Engine(model, {63})
    rng = np.random.default_rng(0)
    # the datastore holds the model's own continuations of random prompts, so drafts often match
    seqs = []
    for _ in range(12):
        p = rng.integers(0, 63, 4).tolist()
        seqs.append(p + engine.generate(p, None, 30).output_ids)
    seqs += [rng.integers(0, 64, 30).tolist() for _ in range(5)]  # and some noise
    ds = datastore_from_sequences(model, seqs, 63, BuildSettings(n_components=16, n_next=8))
    drafter = DReSDDrafter(ds, num_drafts=4, draft_len=6, k=20, exact=False)
    accepted = 0
    for i in range(6):
        prompt = rng.integers(0, 63, 4).tolist()
        ar = engine.generate(prompt, None, 40)
        sd = engine.generate(prompt, drafter, 40)
        assert sd.output_ids == ar.output_ids
        accepted += sum(sd.accept_lengths) - sd.forward_passes
    assert accepted > 0  # the drafting path was exercised


@pytest.mark.embedded
def test_dresd_lossless_on_embedded_model(embedded, tmp_path) -> None:
    """Default datastore built and cached on first use (tiny), then lossless on two GSM8K prompts."""
    from specbench.paths import default_data_dir
    from specbench.run.method_env import MethodEnv
    from specbench.run.methods_factory import build_drafter
    from specbench.models.loading import stop_token_ids
    from specbench.prompts.task import encode_prompt

    data_dir = default_data_dir()
    if data_dir is None or not (data_dir / "gsm8k" / "test.jsonl").is_file():
        pytest.skip("needs the shared data dir")
    lm = embedded
    env = MethodEnv.for_task(lm, data_dir, tmp_path, "gsm8k")
    drafter, cfg = build_drafter("dresd", {"max_tokens": "1500", "num_drafts": "4", "draft_len": "6"}, env)
    assert env.artifacts["datastore_entries"] == 1500 and env.artifacts["datastore_corpora"] == ["gsm8k_train"]
    assert env.artifacts["overhead"]["storage_bytes"] > 1500 * 4  # keys [1500, d] float32 + values
    assert (tmp_path / "datastores" / "dresd").is_dir()
    engine = Engine(lm.model, stop_token_ids(lm.tokenizer, lm.model))
    lines = (data_dir / "gsm8k" / "test.jsonl").read_text().splitlines()[:2]
    for line in lines:
        prompt = encode_prompt(lm.tokenizer, [{"role": "user", "content": json.loads(line)["question"]}])
        ar = engine.generate(prompt, None, 24)
        sd = engine.generate(prompt, drafter, 24)
        assert sd.output_ids == ar.output_ids
