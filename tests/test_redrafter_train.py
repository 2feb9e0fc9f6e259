"""ReDrafter training: a step lowers the loss, checkpoints round-trip, resume is exact, data collection."""
from __future__ import annotations

import dataclasses
import json

import pytest
import torch

import specbench_methods.redrafter.train as train_mod
from specbench_methods.redrafter.checkpoint import checkpoint_hash, load_checkpoint, save_checkpoint
from specbench.training.distill_data import DistillData
from specbench_methods.redrafter.head import build_head, head_config_for
from specbench_methods.redrafter.train import TrainConfig, loss_fn, make_optimizer, train_redrafter, train_step
from tests.conftest import make_tiny_model


def _batch(vocab: int = 64, h: int = 32, n: int = 3, b: int = 16) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(b, h, generator=g), torch.randint(0, vocab, (b, n), generator=g), torch.randint(0, vocab, (b, n), generator=g)


def test_one_training_step_decreases_loss() -> None:
    model = make_tiny_model("llama")
    head = build_head(head_config_for(model), model).train()
    batch = _batch()
    with torch.no_grad():
        before, _ = loss_fn(head, *batch)
    train_step(head, make_optimizer(head, TrainConfig()), batch, lr=1e-3)
    with torch.no_grad():
        after, _ = loss_fn(head, *batch)
    assert float(after) < float(before)
    # the target's embedding is borrowed, not trained
    assert all(p is not model.get_input_embeddings().weight for p in head.parameters())


def test_checkpoint_round_trip(tmp_path) -> None:
    model = make_tiny_model("qwen2")
    head = build_head(head_config_for(model, num_blocks=2), model).eval()
    for p in head.parameters():
        torch.nn.init.normal_(p, std=0.1)
    save_checkpoint(head, tmp_path, {"metrics": {"heldout_top1": [0.5]}})
    from safetensors.torch import load_file

    assert "embed_weight" not in load_file(str(tmp_path / "head.safetensors"))
    loaded, meta = load_checkpoint(tmp_path, model)
    assert loaded.config == head.config and meta["metrics"]["heldout_top1"] == [0.5]
    ctx, inp, _ = _batch()
    assert torch.equal(loaded(ctx, inp), head(ctx, inp))
    assert len(checkpoint_hash(tmp_path)) == 16
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing")


class _SyntheticStore:
    key = {"corpora": ["synthetic"]}

    def describe(self) -> dict:
        return {"path": None, "key": self.key}


def _synthetic_run(monkeypatch, cfg: TrainConfig) -> DistillData:
    """Serve synthetic features in place of the feature store (no target pass)."""
    from specbench.training.feature_store import FeatureOptions

    g = torch.Generator().manual_seed(1)
    n_tok = 400
    tokens = torch.randint(0, 64, (n_tok,), generator=g)
    data = DistillData(torch.randn(n_tok, 32, generator=g).half(), tokens, (tokens * 7 + 3) % 64,
                       torch.arange(0, 300), torch.arange(300, n_tok - cfg.n_predict - 2))
    monkeypatch.setattr(FeatureOptions, "load", lambda self, *a, **k: (data, _SyntheticStore()))
    return data


def test_training_resumes_exactly(tmp_path, monkeypatch) -> None:
    model = make_tiny_model("llama")
    cfg = TrainConfig(tokens=400, batch_size=32, checkpoint_every=3, lr=3e-3)
    args = (model, None, ["synthetic"], None)
    _synthetic_run(monkeypatch, cfg)
    full = train_redrafter(*args, tmp_path / "a", cfg, model_id="tiny", progress=False)
    assert full["steps"] == 10 and len(full["heldout_top1"]) == 3

    calls = {"n": 0}
    real_step = train_mod.train_step

    def interrupted(*a, **k):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real_step(*a, **k)

    monkeypatch.setattr(train_mod, "train_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_redrafter(*args, tmp_path / "b", cfg, model_id="tiny", progress=False)
    state = json.loads((tmp_path / "b" / "train_state.json").read_text())
    assert state["step"] == 3 and state["train_s"] >= 0.0  # the seconds trained so far travel with the state
    state["train_s"] = 1000.0  # as if the first part had taken 1000 s: the resumed total must include them
    (tmp_path / "b" / "train_state.json").write_text(json.dumps(state))
    monkeypatch.setattr(train_mod, "train_step", real_step)
    resumed = train_redrafter(*args, tmp_path / "b", cfg, model_id="tiny", progress=False)
    a, _ = load_checkpoint(tmp_path / "a")
    b, meta = load_checkpoint(tmp_path / "b")
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.allclose(pa, pb, atol=1e-6), name
    assert resumed["heldout_top1"] == full["heldout_top1"] and resumed["train_s"] >= 1000.0
    assert meta["train"] == dataclasses.asdict(cfg) and meta["curve"][-1]["step"] == 10
    assert not (tmp_path / "b" / "train_state.safetensors").exists()


def test_train_config_validation() -> None:
    from specbench.errors import ConfigError

    with pytest.raises(ConfigError):
        TrainConfig(labels="gold").validate()
    assert TrainConfig(tokens=40000).eta_minutes() > 1


@pytest.mark.embedded
def test_store_labels_match_target_greedy(embedded, tmp_path) -> None:
    from specbench.training.feature_store import FeatureOptions

    data, _ = FeatureOptions(root=tmp_path).load(embedded.model, embedded.tokenizer, ["gsm8k_train"], _data_dir(),
                                                 embedded.model_id, positions=60, n_predict=3, max_seq_len=128,
                                                 heldout_every=2, progress=False)
    assert len(data.train_starts) > 0 and len(data.heldout_starts) > 0
    t = int(data.train_starts[0])
    with torch.no_grad():
        logits = embedded.model.get_output_embeddings()(data.hidden[t + 1 : t + 4].float())
    assert logits.argmax(-1).tolist() == data.argmax[t + 1 : t + 4].tolist()
    ctx, inp, lab = data.batch(data.train_starts[:4], 3, "ground_truth")
    assert ctx.shape == (4, 576) and torch.equal(lab[:, :2], inp[:, 1:])


def _data_dir():
    from specbench.paths import default_data_dir

    return default_data_dir()
