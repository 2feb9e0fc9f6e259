"""Hydra: the sequential heads and the tree walk on hand-worked cases, Hydra++'s prefix layer against
transformers' Llama layer, the reference's checkpoint layout (folder and hub id, offline), self-distillation on a
tiny target, and exactness through the engine on the four tiny families."""
from __future__ import annotations

import json
import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from conftest import make_tiny_model
from hub_fixtures import hydra_reference_checkpoint, publish, tiny_vicuna
from specbench_methods.eagle.layer import DraftCache, LayerShape
from specbench_methods.hydra.checkpoint import load_heads
from specbench_methods.hydra.heads import HydraHeads, ResBlock, SubHead
from specbench_methods.hydra.method import HydraConfig, HydraDrafter, build_hydra
from specbench_methods.hydra.prefix import PrefixLayer
from specbench_methods.hydra.train import HydraTrainConfig, train_hydra
from specbench_methods.hydra.tree import TREES, plan
from specbench.datastore import corpora
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.run.method_env import MethodEnv
from test_engine_exact import FAMILIES, greedy_reference
from test_golden import char_tokenizer
from test_sps_distill import tied_tiny_target

SMALL = ((0,), (1,), (0, 0), (1, 0), (0, 1))


def _env(model, tmp_path, tok=None) -> MethodEnv:
    return MethodEnv(model, tok, "tiny", torch.device("cpu"), None, tmp_path / "cache", "synthetic")


def _ctx(tokens: list[int], hidden: torch.Tensor, max_depth: int = 8, new: torch.Tensor | None = None) -> DraftContext:
    return DraftContext(tokens, 1, hidden, max_depth, new if new is not None else hidden[None])


# --- the tree and the sequential heads, by hand ---------------------------------------------------------------

def test_plan_groups_each_depth_by_parent_and_rank() -> None:
    levels = plan(SMALL)
    assert [lv.parents for lv in levels] == [((),), ((0,), (1,))]
    assert [lv.picks for lv in levels] == [((0, 0), (0, 1)), ((0, 0), (0, 1), (1, 0))]
    full = plan(TREES["mc_sim_7b_63"])
    # the reference's children_to_expand: rows per head call are the paths that have children
    assert [len(lv.parents) for lv in full] == [1, 10, 10, 1] and [len(lv.nodes) for lv in full] == [10, 28, 23, 2]
    assert [lv.topk for lv in full] == [10, 10, 10, 2]
    assert len(plan(TREES["mc_sim_7b_63"], max_depth=2)) == 2 and plan([(0, 0), (1, 1, 0)]) == []  # no parents
    assert [lv.picks for lv in plan([(1,), (1, 0), (2, 0, 0)])] == [((0, 1),), ((0, 0),)]  # ranks need not start at 0


def test_first_block_reads_context_and_path_embeddings() -> None:
    """The heads.py worked example: h = 2, c = [1, 0], e_0 = [0, 1], res = [I, I], W = 0, b = 0 -> [1, 1]."""
    block = ResBlock(2, slots=2)
    with torch.no_grad():
        block.res_connection.weight.copy_(torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1]]))
        block.res_connection.bias.zero_()
        block.linear.bias.zero_()
    assert block(torch.tensor([1.0, 0, 0, 1])).tolist() == [1.0, 1.0]
    assert block(torch.tensor([1.0, 0, 1, 0])).tolist() == [2.0, 0.0]  # another root: another feature


def successor_heads(vocab: int = 16) -> tuple[HydraHeads, nn.Embedding]:
    """Two heads over one-hot embeddings (h = V) that read only the path's LAST embedding and score
    ``last + 1`` at 2 and ``last + 2`` at 1: rank 0 = last + 1, rank 1 = last + 2."""
    eye = torch.eye(vocab)
    shift1, shift2 = eye.roll(1, 0), eye.roll(2, 0)  # column i -> row i + 1 (i + 2)
    head = nn.Linear(vocab, vocab, bias=False)
    head.weight.data = eye.clone()
    heads = HydraHeads(vocab, 2, 1, head=SubHead(head, None)).eval()
    with torch.no_grad():
        for k, mlp in enumerate(heads.mlps):
            w = torch.zeros(vocab, (k + 2) * vocab)
            w[:, -vocab:] = 2 * shift1 + shift2
            mlp.first.res_connection.weight.copy_(w)
            mlp.first.res_connection.bias.zero_()
            mlp.first.linear.bias.zero_()
    embed = nn.Embedding(vocab, vocab)
    embed.weight.data = eye.clone()
    return heads, embed


def test_each_depth_is_drafted_from_its_own_path() -> None:
    """Root 10: depth 1 = 11, 12; under 11: 12 (rank 0), 13 (rank 1); under 12: 13. A Medusa head would give both
    depth-2 nodes the same token: the heads see the path."""
    heads, embed = successor_heads()
    seen: list[torch.Tensor] = []
    score = heads.logits
    heads.logits = lambda k, x: (seen.append(x.clone()), score(k, x))[1]  # type: ignore[method-assign]
    drafter = HydraDrafter(heads, embed, SMALL)
    c = torch.randn(16)
    tree = drafter.propose(_ctx([3, 10], c))
    assert tree is not None and tree.tokens == (11, 12, 12, 13, 13) and tree.parents == (-1, -1, 0, 0, 1)
    e = torch.eye(16)
    assert seen[0].shape == (1, 32) and torch.equal(seen[0][0], torch.cat([c, e[10]]))  # head 0: [c, e(root)]
    # head 1 reads one row per depth-1 node with children: [c, e(root), e(d1)]
    assert seen[1].shape == (2, 48) and torch.equal(seen[1][1], torch.cat([c, e[10], e[12]]))
    shallow = drafter.propose(_ctx([3, 10], c, max_depth=1))  # budget=auto's depth hint: fewer head calls
    assert shallow is not None and shallow.tokens == (11, 12) and len(seen) == 3
    assert drafter.propose(_ctx([3, 10], c, max_depth=0)) is None


def test_prefix_layer_is_a_llama_layer_with_its_own_cache() -> None:
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(vocab_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                      num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=500.0)
    torch.manual_seed(0)
    ref = LlamaModel(cfg).eval()
    for p in ref.parameters():  # norms away from 1, so a missing or swapped norm shows
        p.data += 0.1 * torch.randn_like(p)
    ours = PrefixLayer(LayerShape.from_config(cfg)).eval()
    ours.load_state_dict({k: v for k, v in ref.state_dict().items() if not k.startswith("embed_tokens")})
    hidden = torch.randn(7, 32)
    with torch.no_grad():
        expected = ref(inputs_embeds=hidden[None]).last_hidden_state[0]
        full = ours(hidden, torch.arange(7), torch.ones(7, 7, dtype=torch.bool).tril())
        cache = DraftCache()
        chunks = torch.cat([ours.extend(hidden[a:b], cache) for a, b in ((0, 3), (3, 5), (5, 7))])
    assert torch.allclose(full, expected, atol=1e-5) and torch.allclose(chunks, expected, atol=1e-5)
    assert cache.length == 7


# --- published checkpoints -------------------------------------------------------------------------------------

def _reference_logits(state: dict, arch: str, layers: int, k: int, c: torch.Tensor, path: list[torch.Tensor]) -> torch.Tensor:
    """Head k of a reference state dict, computed from its tensors directly (the reference's formulas)."""
    first, step = (1, 2) if arch == "prefix-mlp" else (0, 1)
    w = lambda name: state[f"hydra_mlp.{k}.{name}"].float()  # noqa: E731
    x = torch.cat([c, *path[: k + 1]])
    y = x @ w(f"{first}.res_connection.weight").T + w(f"{first}.res_connection.bias") \
        + F.silu(x @ w(f"{first}.linear.weight").T + w(f"{first}.linear.bias"))
    for j in range(1, layers):
        y = y + F.silu(y @ w(f"{first + j * step}.linear.weight").T + w(f"{first + j * step}.linear.bias"))
    lm = f"hydra_lm_head.{k}.1" if arch == "prefix-mlp" else f"hydra_lm_head.{k}"
    return y @ state[f"{lm}.weight"].float().T + state[f"{lm}.bias"].float()


@pytest.mark.parametrize("arch", ["prefix-mlp", "mlp"])
def test_reference_checkpoint_loads_with_its_names(tmp_path, arch: str) -> None:
    from transformers import LlamaConfig, LlamaModel

    target = make_tiny_model("llama", seed=1)
    folder = hydra_reference_checkpoint(target, tmp_path / "ref", arch, heads=3, layers=3)
    heads, meta = load_heads(folder, target)
    assert heads.arch == arch and heads.num_heads == 3 and meta["head"] == arch and len(meta["weights_sha256"]) == 64
    state = torch.load(folder / "hydra_lm_head.pt", weights_only=True)
    hidden = torch.randn(5, 32)
    c = hidden[-1]
    if arch == "prefix-mlp":
        tc = target.config
        ref = LlamaModel(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=tc.intermediate_size,
                                     num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                                     rms_norm_eps=tc.rms_norm_eps)).eval()
        ref.load_state_dict({k[len("prefix_embeding_layer."):]: v.float() for k, v in state.items()
                             if k.startswith("prefix_embeding_layer.")})
        with torch.no_grad():
            c = ref(inputs_embeds=hidden[None]).last_hidden_state[0, -1]
            ours_c = heads.prefix.extend(hidden, DraftCache())[-1]
        assert torch.allclose(ours_c, c, atol=1e-4)
    path = [torch.randn(32) for _ in range(3)]
    with torch.no_grad():
        for k in range(3):
            got = heads.logits(k, torch.cat([c, *path[: k + 1]])[None])[0]
            assert torch.allclose(got, _reference_logits(state, arch, 3, k, c, path), atol=1e-3)


def test_bad_reference_checkpoints_are_refused(tmp_path) -> None:
    target = make_tiny_model("llama", seed=1)
    folder = hydra_reference_checkpoint(target, tmp_path / "ref", "mlp", heads=2, layers=1)
    with pytest.raises(ConfigError, match="score 64 tokens, the target has 80"):
        load_heads(folder, make_tiny_model("llama", seed=1, vocab=80))
    with pytest.raises(ConfigError, match="does not fit this target"):
        load_heads(folder, _wider_hidden())
    cfg = json.loads((folder / "config.json").read_text())
    for change, match in (({"hydra_head_arch": "cross-attn"}, "only prefix-mlp, mlp"),
                          ({"grounded_heads": False}, "ungrounded"), ({"hidden_state_offset": 2}, "earlier layer")):
        (folder / "config.json").write_text(json.dumps(cfg | change))
        with pytest.raises(ConfigError, match=match):
            load_heads(folder, target)
    with pytest.raises(ConfigError, match="no config.json"):
        load_heads(tmp_path / "missing", target)


def _wider_hidden() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=48, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=4, num_key_value_heads=2)).eval()


def test_published_heads_by_hub_id_offline_and_lossless(tmp_path, monkeypatch) -> None:
    import huggingface_hub.constants as C
    from transformers import AutoModelForCausalLM

    target = AutoModelForCausalLM.from_pretrained(tiny_vicuna(tmp_path / "target"), dtype=torch.float32).eval()
    cache = tmp_path / "hub"
    commit = publish(cache, "ankner/hydra-vicuna-tiny", hydra_reference_checkpoint(target, tmp_path / "h", heads=4, layers=4))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    env = _env(target, tmp_path)
    drafter = build_hydra(HydraConfig(checkpoint=f"ankner/hydra-vicuna-tiny@{commit}", head="mlp"), env)
    assert drafter.heads.arch == "prefix-mlp"  # the checkpoint's config.json decides, not the option
    source = env.artifacts["checkpoint_source"]
    assert source["repo"] == "ankner/hydra-vicuna-tiny" and source["revision"] == commit and len(source["sha256"]) == 64
    prompt = [1, 5, 9, 13, 5, 9, 13, 5]
    gen = Engine(target, stop_ids=set()).generate(prompt, drafter, 24)
    assert gen.output_ids == greedy_reference(target, prompt, 24) and max(gen.draft_sizes) == 63


# --- training ---------------------------------------------------------------------------------------------------

CORPUS = "tiny_hydra_echo"
_ECHO: list[str] = []  # the tiny target's own greedy continuations, filled on first use
corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: (("", t) for t in list(_ECHO)))


def test_self_distillation_learns_saves_and_stays_lossless(tmp_path) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    if not _ECHO:
        engine = Engine(target, stop_ids=set())
        for i in range(40):
            prompt = tok(("abcdefgh " * 3)[i % 9:][: 8 + i % 5], add_special_tokens=False)["input_ids"]
            _ECHO.append(tok.decode(prompt + engine.generate(prompt, None, 48).output_ids))
    common = dict(num_heads=2, num_layers=2, tokens=1500, window=32, batch_size=128, max_seq_len=64, heldout_every=4,
                  draft_vocab=24, dropout=0.0)
    metrics = train_hydra(target, tok, [CORPUS], None, tmp_path / "t", HydraTrainConfig(epochs=8, lr=1e-2, **common),
                          "tiny", progress=False)
    base = train_hydra(target, tok, [CORPUS], None, tmp_path / "u", HydraTrainConfig(epochs=1, lr=1e-12, **common),
                       "tiny", progress=False)  # the same held-out positions, no learning
    assert len(metrics["heldout_top1"]) == 2 and metrics["draft_vocab"] == 24
    assert metrics["heldout_top1"][0] > base["heldout_top1"][0] + 0.2
    heads, meta = load_heads(tmp_path / "t", target)
    assert meta["metrics"] == metrics and heads.arch == "prefix-mlp" and heads.shared.size == 24
    prompt = tok("abcdefgh abc", add_special_tokens=False)["input_ids"]
    gen = Engine(target, stop_ids=set()).generate(prompt, HydraDrafter(heads, target.get_input_embeddings(), SMALL), 40)
    assert gen.output_ids == greedy_reference(target, prompt, 40)
    assert sum(a - 1 for a in gen.accept_lengths) > 5  # trained heads get drafts accepted
    weights = tmp_path / "t" / "hydra.safetensors"  # the recorded hash is checked on load
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x00")
    with pytest.raises(ConfigError, match="corrupt"):
        load_heads(tmp_path / "t", target)


def test_plain_hydra_recipe_learns_the_text(tmp_path) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    if not _ECHO:
        pytest.skip("runs after the distillation test fills the echo corpus")
    cfg = HydraTrainConfig(head="mlp", loss="lm", num_layers=1, num_heads=2, tokens=1500, epochs=8, window=32,
                           batch_size=128, lr=1e-2, max_seq_len=64, heldout_every=4, draft_vocab=0, dropout=0.0)
    metrics = train_hydra(target, tok, [CORPUS], None, tmp_path, cfg, "tiny", progress=False)
    heads, _ = load_heads(tmp_path, target)
    assert heads.arch == "mlp" and heads.prefix is None and metrics["heldout_top1"][0] > 0.5


# --- exactness through the engine -------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("head", ["prefix-mlp", "mlp"])
def test_lossless_on_four_families(family: str, head: str, tmp_path) -> None:
    """Identity-initialised heads (``checkpoint=random``) and heads with random weights: output = greedy."""
    model = make_tiny_model(family, seed=1)
    rng = random.Random(family)
    prompt = [rng.randrange(64) for _ in range(9)]
    expected = greedy_reference(model, prompt, 32)
    drafter = build_hydra(HydraConfig(checkpoint="random", head=head, dtype="float32"), _env(model, tmp_path))
    gen = Engine(model, stop_ids=set()).generate(prompt, drafter, 32)
    assert gen.output_ids == expected and max(gen.draft_sizes) == 63
    torch.manual_seed(5)
    shape = LayerShape.from_config(model.config) if head == "prefix-mlp" else None
    noisy = HydraHeads(32, 4, 2, shape, head=SubHead(model.get_output_embeddings(), None))
    gen = Engine(model, stop_ids=set()).generate(prompt, HydraDrafter(noisy, model.get_input_embeddings(),
                                                                      TREES["mc_sim_7b_63"]), 32)
    assert gen.output_ids == expected


def test_prefix_cache_follows_the_context(tmp_path) -> None:
    model = make_tiny_model("llama", seed=2)
    drafter = build_hydra(HydraConfig(checkpoint="random", dtype="float32"), _env(model, tmp_path))
    prompt = [4, 8, 15, 16, 23, 42, 4, 8]
    Engine(model, stop_ids=set()).generate(prompt, drafter, 20)
    drafter.begin(prompt)
    assert drafter.cache.length == 0
    with pytest.raises(RuntimeError, match="prefix cache holds 0 rows, expected 3"):
        drafter.propose(_ctx([1, 2, 3, 4, 5], torch.randn(32), new=torch.randn(1, 32)))


def test_bad_options_are_refused() -> None:
    for bad, match in (({"head": "cross-attn"}, "head must be"), ({"tree": "nope"}, "tree must be"),
                       ({"tree_size": -1}, "tree_size"), ({"dtype": "int8"}, "dtype")):
        with pytest.raises(ConfigError, match=match):
            HydraConfig(**bad).validate()
    for bad, match in (({"loss": "kl"}, "loss"), ({"draft_vocab": 5}, "draft_vocab"), ({"epochs": 0}, ">= 1")):
        with pytest.raises(ConfigError, match=match):
            HydraTrainConfig(**bad).validate()
