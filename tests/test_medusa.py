"""Medusa: the sparse tree from rank paths, heads that start as the target's own head, the reference's
checkpoint format, self-distillation on a tiny target, and losslessness through the engine."""
from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from conftest import make_tiny_model
from specbench_methods.medusa.checkpoint import load_heads
from specbench_methods.medusa.heads import MedusaHeads
from specbench_methods.medusa.method import MedusaDrafter
from specbench_methods.medusa.train import MedusaTrainConfig, train_medusa
from specbench_methods.medusa.tree import MC_SIM_7B_63, max_rank, tree_from_choices
from specbench.errors import ConfigError
from specbench.engine.loop import Engine
from test_engine_exact import greedy_reference
from test_golden import char_tokenizer
from specbench.datastore import corpora
from test_sps_distill import tied_tiny_target

# periodic text: the token after next is predictable from the hidden state, so heads can learn it
CORPUS = "tiny_medusa_periodic"
_CYCLE = "abcdefgh "
corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: (("", (_CYCLE * 9)[i % 9 :][:64]) for i in range(60)))


def test_tree_from_rank_paths() -> None:
    tree = tree_from_choices([[5, 6], [7, 8]], [(0, 0), (1,), (0,)])
    assert tree.tokens == (5, 6, 7) and tree.parents == (-1, -1, 0)
    full = tree_from_choices([list(range(10 * k, 10 * k + 10)) for k in range(4)], MC_SIM_7B_63)
    assert len(full) == 63 and max(full.depths()) == 4 and max_rank(MC_SIM_7B_63) == 10
    assert len(tree_from_choices([[1, 2]], MC_SIM_7B_63)) == 2  # one head, two ranks: depth-1 ranks 0 and 1 only
    # every prefix of the reference's list is a tree of exactly that many nodes (tree_size keeps a prefix)
    for n in range(1, len(MC_SIM_7B_63) + 1):
        assert all(len(c) == 1 or c[:-1] in MC_SIM_7B_63[:i] for i, c in enumerate(MC_SIM_7B_63[:n]))


def test_untrained_heads_repeat_the_targets_prediction() -> None:
    target = make_tiny_model("llama", seed=1)
    heads = MedusaHeads(32, 64, 3, 1, target.get_output_embeddings()).eval()
    hidden = torch.randn(5, 32)
    expected = target.get_output_embeddings()(hidden).argmax(-1)
    assert torch.equal(heads(hidden).argmax(-1), expected[:, None].expand(5, 3))


def test_reference_checkpoint_loads_and_bad_ones_are_refused(tmp_path) -> None:
    target = make_tiny_model("llama", seed=1)
    torch.manual_seed(0)
    state = {"0.0.linear.weight": torch.randn(32, 32), "0.0.linear.bias": torch.randn(32), "0.1.weight": torch.randn(64, 32),
             "1.0.linear.weight": torch.randn(32, 32), "1.0.linear.bias": torch.randn(32), "1.1.weight": torch.randn(64, 32)}
    save_file(state, str(tmp_path / "medusa_lm_head.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({"medusa_num_heads": 2, "medusa_num_layers": 1}))
    heads, meta = load_heads(tmp_path, target)
    x = torch.randn(3, 32)
    h1 = x + torch.nn.functional.silu(x @ state["1.0.linear.weight"].T + state["1.0.linear.bias"])
    assert torch.allclose(heads.eval()(x)[:, 1], h1 @ state["1.1.weight"].T, atol=1e-5)
    assert meta["num_heads"] == 2 and meta["own_lm_head"]
    wide = make_tiny_model("llama", seed=1, vocab=80)
    with pytest.raises(ConfigError, match="does not fit"):
        load_heads(tmp_path, wide)
    (tmp_path / "medusa_lm_head.safetensors").unlink()
    torch.save(state, tmp_path / "medusa_lm_head.pt")  # .pt goes through torch.load(weights_only=True)
    assert load_heads(tmp_path, target)[0].num_heads == 2
    with pytest.raises(ConfigError, match="no config.json"):
        load_heads(tmp_path / "missing", target)


def test_self_distillation_beats_the_untrained_heads_and_stays_lossless(tmp_path) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    cfg = MedusaTrainConfig(num_heads=2, tokens=1500, epochs=6, batch_size=32, lr=1e-2, max_seq_len=64, heldout_every=4)
    metrics = train_medusa(target, tok, [CORPUS], None, tmp_path, cfg, "tiny", progress=False)
    trained, meta = load_heads(tmp_path, target)
    assert meta["metrics"]["heldout_top1"] == metrics["heldout_top1"] and len(metrics["heldout_top1"]) == 2
    # the same held-out positions scored by untrained heads (no learning): training must have helped head 0
    base = train_medusa(target, tok, [CORPUS], None, tmp_path / "zero", MedusaTrainConfig(
        num_heads=2, tokens=1500, epochs=1, batch_size=32, lr=1e-12, max_seq_len=64, heldout_every=4), "tiny", progress=False)
    assert metrics["heldout_top1"][0] > base["heldout_top1"][0]
    prompt = tok("abc def gh", add_special_tokens=False)["input_ids"]
    gen = Engine(target, stop_ids=set()).generate(prompt, MedusaDrafter(trained, MC_SIM_7B_63), 30)
    assert gen.output_ids == greedy_reference(target, prompt, 30)
    assert max(gen.draft_sizes) > 1
