"""DFlash's trained draft: self-distillation on a tiny target learns every block row and stays lossless (with
``budget=auto`` too), a published draft by hub id offline, and the first-use build the run estimate reports."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.dflash.checkpoint import load_draft
from specbench_methods.dflash.method import DFlashConfig, DFlashDrafter, dflash_first_use
from specbench.budget.auto_budget import AutoBudget
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.run.method_env import MethodEnv
from test_engine_exact import greedy_reference



def test_self_distillation_learns_and_stays_lossless(tmp_path) -> None:
    from specbench_methods.dflash.train import DFlashTrainConfig, train_dflash
    from test_eagle import CORPUS, _echo_corpus  # the tiny target's own greedy continuations of periodic prompts
    from test_golden import char_tokenizer
    from test_sps_distill import tied_tiny_target

    target, tok = tied_tiny_target(), char_tokenizer()
    _echo_corpus(target, tok)
    recipe = dict(tokens=1500, layers=2, block_size=4, anchors=16, batch_size=4, max_seq_len=64, heldout_every=4)
    metrics = train_dflash(target, tok, [CORPUS], None, tmp_path, DFlashTrainConfig(epochs=4, lr=2e-2, **recipe), "tiny",
                           progress=False)
    untrained = train_dflash(target, tok, [CORPUS], None, tmp_path / "zero", DFlashTrainConfig(epochs=1, lr=1e-12, **recipe),
                             "tiny", progress=False)
    rows, before = metrics["heldout_top1_steps"], untrained["heldout_top1_steps"]
    assert len(rows) == 3 and all(a > b + 0.3 for a, b in zip(rows, before))  # every block row learnt
    assert metrics["heldout_accept"] > untrained["heldout_accept"] + 1.0
    draft, meta = load_draft(tmp_path, target)
    assert draft.feature_layers == (1, 1) and meta["metrics"]["heldout_top1"] == rows[0] and meta["recipe"] == "custom"
    prompt = tok("abc def gh", add_special_tokens=False)["input_ids"]
    engine, ref = Engine(target, stop_ids=set()), greedy_reference(target, prompt, 30)
    gen = engine.generate(prompt, DFlashDrafter(draft), 30)
    assert gen.output_ids == ref and gen.forward_passes < 15  # drafts were accepted: fewer than half the forwards
    # budget=auto: on a flat cost curve whole blocks are verified, on a steep one a node or none; exact either way
    for slope in (0.01, 0.5):
        budget = AutoBudget(lambda n, context=None, s=slope: 1.0 + s * (np.asarray(n) - 1), calibrate=False)
        assert engine.generate(prompt, DFlashDrafter(draft), 30, budget=budget).output_ids == ref


def test_published_checkpoint_by_hub_id_offline(tmp_path, monkeypatch) -> None:
    """A draft in z-lab's layout served from a hub cache built here: built by name, its repository, revision and
    hash in the artifacts, its block size, mask id and tapped layers read from its config, lossless."""
    import huggingface_hub.constants as C

    from hub_fixtures import dflash_reference_checkpoint, publish
    from specbench.run.methods_factory import build_drafter

    target = make_tiny_model("llama", seed=1)
    commit = publish(tmp_path / "hub", "z-lab/tiny-DFlash-b4", dflash_reference_checkpoint(target, tmp_path / "df"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    env = MethodEnv(target, None, "tiny", torch.device("cpu"), None, tmp_path / "cache", "synthetic")
    drafter, _ = build_drafter("dflash", {"checkpoint": "z-lab/tiny-DFlash-b4"}, env)
    source = env.artifacts["checkpoint_source"]
    assert source["repo"] == "z-lab/tiny-DFlash-b4" and source["revision"] == commit and len(source["sha256"]) == 64
    assert env.artifacts["checkpoint"]["block_size"] == 4 and env.artifacts["checkpoint"]["draft_layers"] == 2
    assert drafter.feature_layers == (1, 1) and drafter.draft.mask_token_id == 62
    prompt = [3, 1, 4, 1, 5, 9]
    assert Engine(target, stop_ids=set()).generate(prompt, drafter, 20).output_ids == greedy_reference(target, prompt, 20)
    drafter.begin(prompt)
    tree = drafter.propose(DraftContext(prompt + [2], 6, torch.randn(32), 8, torch.randn(6, 32),
                                        layer_states=torch.randn(6, 2, 32)))
    assert tree is not None and len(tree) == 3  # block 4: the root and three drafted tokens


def test_reference_layout_mismatches_are_refused_in_one_line(tmp_path) -> None:
    from hub_fixtures import dflash_reference_checkpoint

    target = make_tiny_model("llama", seed=1)
    ref = dflash_reference_checkpoint(target, tmp_path / "ref")
    cfg = json.loads((ref / "config.json").read_text())
    for change, message in (({"num_target_layers": 36}, "does not fit this target"),
                            ({"dflash_config": {"mask_token_id": 99}}, "mask_token_id 99"),
                            ({"dflash_config": {"mask_token_id": 1, "target_layer_ids": [0, 5]}}, "taps target layers"),
                            ({"layer_types": ["sliding_attention", "full_attention"]}, "sliding-window"),
                            ({"block_size": None} | {"dflash_config": None}, "not a DFlash draft")):
        (ref / "config.json").write_text(json.dumps({k: v for k, v in (cfg | change).items() if v is not None}))
        with pytest.raises(ConfigError, match=message):
            load_draft(ref, target)


def test_first_use_build_is_reported_until_the_default_exists(tmp_path) -> None:
    from specbench.training.checkpoints import default_dir
    from specbench_methods.dflash.train import RECIPES

    target = make_tiny_model("llama", seed=1)
    env = MethodEnv(target, None, "tiny", torch.device("cpu"), None, tmp_path, "synthetic")
    pending = dflash_first_use(DFlashConfig(), env)
    assert pending is not None and pending.what == "train dflash's quick recipe" and pending.seconds > 0
    path = default_dir(env, "dflash", RECIPES["quick"], "quick")
    assert pending.key == str(path) and dflash_first_use(DFlashConfig(checkpoint="random"), env) is None
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    assert dflash_first_use(DFlashConfig(), env) is None
