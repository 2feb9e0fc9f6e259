"""ReDrafter on the target's device and dtype: training in fp32 master weights, heads shared by tasks."""
from __future__ import annotations

import pytest
import torch

import specbench_methods.redrafter.train as train_mod
from specbench_methods.redrafter.train import TrainConfig, build_train_head, train_redrafter
from specbench.engine.backends.packed_linear import draft_dtype
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter
from tests.conftest import make_tiny_model
from tests.test_redrafter_train import _synthetic_run


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_train_head_is_fp32_and_borrows_the_half_precision_embedding(dtype) -> None:
    model = make_tiny_model("llama").to(dtype)
    head = build_train_head(model, TrainConfig())
    assert {p.dtype for p in head.parameters()} == {torch.float32}
    emb = model.get_input_embeddings().weight
    # borrowed, not copied into a new fp32 table
    assert head.embed_weight.data_ptr() == emb.data_ptr() and head.embed_weight.dtype == dtype
    assert torch.equal(head.lm_head.weight, model.get_output_embeddings().weight.float())


def test_training_follows_the_head_placement(tmp_path, monkeypatch) -> None:
    """A placement other than the default (here float64) reaches the head, every batch and the optimiser."""
    model = make_tiny_model("llama").to(torch.bfloat16)
    cfg = TrainConfig(tokens=400, batch_size=64, checkpoint_every=100)
    _synthetic_run(monkeypatch, cfg)
    monkeypatch.setattr(train_mod, "head_placement", lambda m: (next(m.parameters()).device, torch.float64))
    seen = []
    real_step = train_mod.train_step

    def spy(head, opt, batch, lr):
        seen.append((head.lm_head.weight.dtype, head.lm_head.weight.device, [(t.dtype, t.device) for t in batch]))
        loss, hits = real_step(head, opt, batch, lr)
        assert hits.device == head.lm_head.weight.device
        return loss, hits

    monkeypatch.setattr(train_mod, "train_step", spy)
    metrics = train_redrafter(model, None, ["synthetic"], None, tmp_path, cfg, model_id="tiny", progress=False)
    assert seen and metrics["steps"] == len(seen)
    device = next(model.parameters()).device
    for head_dtype, head_device, batch in seen:
        assert head_dtype == torch.float64 and head_device == device
        assert batch[0] == (torch.float64, device)  # context in the head's dtype
        assert all(d == device for _, d in batch) and batch[1][0] == batch[2][0] == torch.long


@pytest.mark.parametrize("checkpoint", ["random", "trained"])
def test_one_head_shared_by_every_task(tmp_path, checkpoint) -> None:
    model = make_tiny_model("qwen2").to(torch.float16)
    opts: dict = {"checkpoint": "random"}
    if checkpoint == "trained":
        from specbench_methods.redrafter.checkpoint import save_checkpoint

        save_checkpoint(build_train_head(model, TrainConfig()), tmp_path / "ckpt")
        opts = {"checkpoint": str(tmp_path / "ckpt")}
    heads = []
    for task in ("gsm8k", "mt_bench"):
        env = MethodEnv(model, None, "tiny", torch.device("cpu"), None, tmp_path, task)
        drafter, _ = build_drafter("redrafter", opts, env)
        heads.append(drafter.head)
        assert env.artifacts["checkpoint"] in ("random", opts["checkpoint"])
    assert heads[0] is heads[1]
    head = heads[0]
    assert {p.dtype for p in head.parameters()} == {draft_dtype("auto", model)}  # the drafting copy's dtype
    assert head.embed_weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    # another target gets its own head
    other = make_tiny_model("qwen2").to(torch.float16)
    env = MethodEnv(other, None, "tiny", torch.device("cpu"), None, tmp_path, "gsm8k")
    assert build_drafter("redrafter", opts, env)[0].head is not head
