"""EAGLE-3: the draft vocabulary's maps, feature fusion, the decoder layer against the reference's math on one
row, the training-time-test unroll (hand-checked attention, and equal to drafting a chain), checkpoints in the
reference's layout, self-distillation on a tiny target, losslessness on the four tiny families."""
from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from conftest import make_tiny_model
from specbench_methods.eagle.layer import DraftCache
from specbench_methods.eagle3.checkpoint import load_draft, save_draft
from specbench_methods.eagle3.init import new_draft
from specbench_methods.eagle3.layer import reference_layers
from specbench_methods.eagle3.method import Eagle3Config, Eagle3Drafter
from specbench_methods.eagle3.ttt import UnrolledKeys, Windows, unroll
from specbench_methods.eagle3.train import gather
from specbench_methods.eagle3.vocab import DraftVocab, most_frequent
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.training.distill_data import DistillData
from test_engine_exact import FAMILIES, greedy_reference


def _draft(family: str = "llama", vocab: DraftVocab | None = None, seed: int = 0):
    target = make_tiny_model(family, seed=1)
    torch.manual_seed(seed)
    layer = new_draft(target, vocab).eval()
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if p.requires_grad:  # non-trivial weights everywhere, norms included
                p.copy_(1.0 + 0.2 * torch.randn_like(p) if "norm" in name else 0.3 * torch.randn_like(p))
    return target, layer


# -- the draft vocabulary -----------------------------------------------------------------------------------


def test_d2t_maps_draft_ids_to_target_ids() -> None:
    vocab = DraftVocab.from_ids([9, 3, 5], 10)
    assert vocab.d2t().tolist() == [3, 4, 7] and vocab.mask().nonzero().flatten().tolist() == [3, 5, 9]
    assert DraftVocab.from_buffers(vocab.d2t(), vocab.mask()).ids.tolist() == [3, 5, 9]
    _, layer = _draft(vocab=DraftVocab.from_ids([60, 2, 17, 33], 64))
    assert layer.to_target(torch.tensor([3, 0, 1])).tolist() == [60, 2, 17]  # id + d2t[id]
    with pytest.raises(ValueError, match="disagree"):
        DraftVocab.from_buffers(vocab.d2t(), torch.isin(torch.arange(10), torch.tensor([3, 5, 8])))


def test_most_frequent_tokens_with_ties_to_the_smaller_id() -> None:
    assert most_frequent(torch.tensor([7, 7, 2, 2, 5, 1, 5, 5]), 2, 8).ids.tolist() == [2, 5]  # 5 thrice; 2 ties 7
    assert most_frequent(torch.tensor([4, 4, 6, 6, 1]), 1, 8).ids.tolist() == [4]
    assert most_frequent(torch.tensor([3]), 5, 6).size == 5  # pads with unseen ids, the smallest first


# -- the network ---------------------------------------------------------------------------------------------


def test_reference_feature_layers() -> None:
    assert reference_layers(32) == (2, 16, 29)  # a Llama-2-7B / Vicuna-7B target
    assert reference_layers(30) == (2, 15, 27)  # the embedded SmolLM2-135M
    assert reference_layers(2) == (0, 1, 1)  # the tiny test models: clamped


def test_fusion_concatenates_low_middle_high_in_order() -> None:
    _, layer = _draft()
    states = torch.randn(5, 3, 32)  # [n, 3, H]
    fused = layer.fuse(states)
    assert layer.fc.weight.shape == (32, 96) and fused.shape == (5, 32)
    w = layer.fc.weight
    parts = sum(states[:, i] @ w[:, 32 * i : 32 * (i + 1)].T for i in range(3))
    torch.testing.assert_close(fused, parts)


def _rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return w * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def test_one_row_equals_the_references_math() -> None:
    """One row, no cache: attention over a single key returns each head's value, so the layer is
    ``g = f + o(v(cat(norm_in(e), norm_h(f))))`` then ``g + mlp(norm_post(g))`` (the reference's cnets)."""
    target, layer = _draft()
    sd = {k: v for k, v in layer.state_dict().items()}
    eps = layer.shape.eps
    f, tok = torch.randn(1, 32), torch.tensor([7])
    e = target.get_input_embeddings()(tok)
    both = torch.cat([_rms(e, sd["midlayer.input_layernorm.weight"], eps), _rms(f, sd["midlayer.hidden_norm.weight"], eps)], -1)
    v = both @ sd["midlayer.self_attn.v_proj.weight"].T  # [1, KV * d] (2 KV heads of 8)
    heads = v.view(2, 8).repeat_interleave(2, 0).reshape(1, 32)  # 4 query heads, 2 per KV head
    g = f + heads @ sd["midlayer.self_attn.o_proj.weight"].T
    x = _rms(g, sd["midlayer.post_attention_layernorm.weight"], eps)
    mlp = (F.silu(x @ sd["midlayer.mlp.gate_proj.weight"].T) * (x @ sd["midlayer.mlp.up_proj.weight"].T)) @ sd["midlayer.mlp.down_proj.weight"].T
    want = g + mlp
    got = layer(f, tok, torch.tensor([4]), torch.ones(1, 1, dtype=torch.bool))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(layer.logits(got), _rms(want, sd["norm.weight"], eps) @ sd["lm_head.weight"].T,
                               atol=1e-5, rtol=1e-5)


# -- training-time test --------------------------------------------------------------------------------------


def test_unrolled_attention_hand_checked() -> None:
    """Step 0: row 1 weighs keys (0, ln 3) -> values (1, 5) at 1/4, 3/4 = 4. Step 1 adds each row's own key:
    row 0 sees (0; ln 2) -> (1; 10) at 1/3, 2/3 = 7; row 1 sees (0, ln 3; 0) -> (1, 5; 20) at .2, .6, .2 = 7.2."""
    attend = UnrolledKeys(torch.ones(2, 2, dtype=torch.bool).tril()[None])
    q = torch.ones(1, 1, 2, 1)
    step0 = attend(q, torch.tensor([0.0, math.log(3)]).view(1, 1, 2, 1), torch.tensor([1.0, 5.0]).view(1, 1, 2, 1))
    assert step0.flatten().tolist() == pytest.approx([1.0, 4.0])
    step1 = attend(q, torch.tensor([math.log(2), 0.0]).view(1, 1, 2, 1), torch.tensor([10.0, 20.0]).view(1, 1, 2, 1))
    assert step1.flatten().tolist() == pytest.approx([7.0, 7.2])


def test_windows_read_the_shifted_tokens_and_teacher_rows() -> None:
    """One sequence of 12 positions, starts 2..5, windows of 3 rows, 2 steps: row p reads token p + 1 + j at step j."""
    n = 12
    data = DistillData(hidden=torch.arange(n).float()[:, None].repeat(1, 4).half(), tokens=100 + torch.arange(n),
                       argmax=200 + torch.arange(n), train_starts=torch.arange(2, 6), heldout_starts=torch.zeros(0, dtype=torch.long),
                       layer_states=torch.arange(n).float()[:, None, None].repeat(1, 3, 4).half())
    b = gather(data, [(2, 3), (5, 1)], window=3, steps=2, device=torch.device("cpu"))
    assert b.rows.tolist() == [[True, True, True], [True, False, False]]
    assert b.layer_states[:, :, 0, 0].tolist() == [[2, 3, 4], [5, 6, 7]]  # features at the rows (padding: ignored)
    assert b.tokens.tolist() == [[103, 104, 105, 106], [106, 107, 108, 109]]  # step j: columns j .. j + 2
    assert b.teacher[0, :, 0].tolist() == [3, 4, 5, 6] and b.labels[0].tolist() == [203, 204, 205, 206]
    assert b.causal_mask()[1].tolist() == [[True, False, False], [True, True, False], [True, False, True]]  # pads see row 0


def test_unroll_equals_drafting_a_chain_through_the_cache() -> None:
    """Step j at row p = the drafting path: the context rows 0..p in the draft cache, then a chain of j nodes
    (tokens p + 2 .. p + 1 + j) each fed its parent's output, at positions p + 1 .. p + j."""
    _, layer = _draft(seed=3)
    w, steps = 6, 3
    states, tokens = torch.randn(1, w, 3, 32), torch.randint(0, 64, (1, w + steps - 1))
    batch = Windows(states, tokens, torch.zeros(1, w + steps - 1, 32), torch.zeros(1, w + steps - 1, dtype=torch.long),
                    torch.ones(1, w, dtype=torch.bool))
    outs = unroll(layer, batch, steps)
    for p in range(w):
        cache = DraftCache()
        ctx = layer(layer.fuse(states[0, : p + 1]), tokens[0, : p + 1], torch.arange(p + 1),
                    torch.ones(p + 1, p + 1, dtype=torch.bool).tril(), cache)
        feat = ctx[-1]
        torch.testing.assert_close(outs[0][0, p], feat, atol=1e-5, rtol=1e-4)
        for j in range(1, steps):
            feat = layer(feat[None], tokens[0, p + j : p + j + 1], torch.tensor([p + j]),
                         torch.ones(1, cache.length + 1, dtype=torch.bool), cache)[0]
            torch.testing.assert_close(outs[j][0, p], feat, atol=1e-5, rtol=1e-4)


# -- drafting ------------------------------------------------------------------------------------------------


def test_drafts_only_ids_of_the_draft_vocabulary() -> None:
    vocab = DraftVocab.from_ids(list(range(0, 64, 3)), 64)
    target, layer = _draft(vocab=vocab)
    drafter = Eagle3Drafter(layer, (0, 1, 1), Eagle3Config(top_k=3, depth=2, total_tokens=20))
    drafter.begin([1, 2, 3])
    tree = drafter.propose(DraftContext([1, 2, 3, 4], 3, torch.randn(32), 10, torch.randn(3, 32),
                                        layer_states=torch.randn(3, 3, 32)))
    assert tree is not None and len(tree) == 20 and max(tree.depths()) == 3  # 3 + 9 + 9 generated, 20 kept
    assert set(tree.tokens) <= set(vocab.ids.tolist())
    assert drafter.cache.length == 3  # the tree's rows were dropped


@pytest.mark.parametrize("family", FAMILIES)
def test_lossless_with_a_random_draft_on_every_family(family: str) -> None:
    target, layer = _draft(family, DraftVocab.from_ids(list(range(0, 64, 2)), 64), seed=4)
    prompt = [5, 9, 2, 7, 7, 1]
    drafter = Eagle3Drafter(layer, reference_layers(2), Eagle3Config(top_k=3, depth=3, total_tokens=10))
    for backend in ("reference", "fast"):
        gen = Engine(target, stop_ids=set(), backend=backend).generate(prompt, drafter, 30)
        assert gen.output_ids == greedy_reference(target, prompt, 30)


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_slots_draft_as_alone(family: str) -> None:
    """Batch width 2 with refill over three prompts: each slot's EAGLE-3 drafter reads its own sequence's fused
    features; outputs equal AR's and the drafts are the ones it makes decoding alone (same acceptance lengths)."""
    target, layer = _draft(family, DraftVocab.from_ids(list(range(0, 64, 2)), 64), seed=5)
    prompts = [[5, 9, 2, 7, 7, 1], [3, 3, 8], [11, 4, 6, 1, 2, 9, 9, 30, 2]]
    cfg = Eagle3Config(top_k=3, depth=3, total_tokens=10)
    engine = Engine(target, stop_ids=set())
    alone = [engine.generate(p, Eagle3Drafter(layer, reference_layers(2), cfg), 24) for p in prompts]
    assert [g.output_ids for g in alone] == [greedy_reference(target, p, 24) for p in prompts]
    slots = [Eagle3Drafter(layer, reference_layers(2), cfg) for _ in range(2)]
    gens = BatchDecoder(engine, 24).generate([Request(p) for p in prompts], slots, 2, refill=True)
    assert [g.output_ids for g in gens] == [g.output_ids for g in alone]
    assert [g.accept_lengths for g in gens] == [g.accept_lengths for g in alone]


# -- checkpoints ---------------------------------------------------------------------------------------------


def test_our_checkpoint_round_trips_and_is_verified(tmp_path) -> None:
    target, layer = _draft(vocab=DraftVocab.from_ids([1, 4, 9, 16, 25], 64))
    save_draft(layer, (0, 1, 1), tmp_path, {"metrics": {"heldout_top1": 0.5}})
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["draft_vocab_size"] == 5 and cfg["vocab_size"] == 64 and cfg["specbench"]["feature_layers"] == [0, 1, 1]
    loaded, layers, meta = load_draft(tmp_path, target)
    assert layers == (0, 1, 1) and meta["metrics"]["heldout_top1"] == 0.5
    x, t = torch.randn(3, 32), torch.tensor([1, 2, 3])
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    torch.testing.assert_close(loaded.eval()(x, t, torch.arange(3), mask), layer(x, t, torch.arange(3), mask))
    assert torch.equal(loaded.d2t, layer.d2t) and torch.equal(loaded.t2d, layer.t2d)
    data = bytearray((tmp_path / "model.safetensors").read_bytes())
    data[-5] ^= 1
    (tmp_path / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="corrupt"):
        load_draft(tmp_path, target)


def test_reference_layout_loads_and_bad_ones_are_refused(tmp_path) -> None:
    from hub_fixtures import eagle3_reference_checkpoint

    target = make_tiny_model("llama", seed=1)
    ref = eagle3_reference_checkpoint(target, tmp_path / "ref", draft_vocab=16)
    layer, layers, meta = load_draft(ref, target)
    state = torch.load(ref / "pytorch_model.bin", weights_only=True)
    assert layers == reference_layers(2) and meta == {"source": "pytorch_model.bin"}
    torch.testing.assert_close(layer.lm_head.weight, state["lm_head.weight"].float())
    assert layer.to_target(torch.arange(16)).tolist() == (torch.arange(16) + state["d2t"]).tolist()
    cfg = json.loads((ref / "config.json").read_text())
    (ref / "config.json").write_text(json.dumps(cfg | {"vocab_size": 100}))
    with pytest.raises(ConfigError, match="does not fit this target"):
        load_draft(ref, target)
    (ref / "config.json").write_text(json.dumps(cfg))
    torch.save({k: v for k, v in state.items() if k not in ("d2t", "t2d")}, ref / "pytorch_model.bin")
    with pytest.raises(ConfigError, match="no d2t"):
        load_draft(ref, target)
    torch.save({"fc.weight": torch.zeros(32, 64), "layers.0.mlp.up_proj.weight": torch.zeros(2, 2)}, ref / "pytorch_model.bin")
    with pytest.raises(ConfigError, match="not an EAGLE-3 draft"):
        load_draft(ref, target)


def test_bad_options_are_refused() -> None:
    from specbench_methods.eagle3.train import Eagle3TrainConfig

    with pytest.raises(ConfigError, match="top_k"):
        Eagle3Config(top_k=0).validate()
    with pytest.raises(ConfigError, match="dtype"):
        Eagle3Config(dtype="int3").validate()
    with pytest.raises(ConfigError, match="head_init"):
        Eagle3TrainConfig(head_init="zeros").validate()
    with pytest.raises(ConfigError, match="ttt_steps"):
        Eagle3TrainConfig(ttt_steps=0).validate()


def test_published_checkpoint_by_hub_id_offline(tmp_path, monkeypatch) -> None:
    """A draft in the reference's layout served from a hub cache built here: built by name, its repository,
    revision and hash in the artifacts, lossless, drafting only its vocabulary's ids."""
    import huggingface_hub.constants as C

    from hub_fixtures import eagle3_reference_checkpoint, publish
    from specbench.run.method_env import MethodEnv
    from specbench.run.methods_factory import build_drafter

    target = make_tiny_model("llama", seed=1)
    commit = publish(tmp_path / "hub", "yuhuili/EAGLE3-tiny", eagle3_reference_checkpoint(target, tmp_path / "e3", 24))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(C, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", True)
    env = MethodEnv(target, None, "tiny", torch.device("cpu"), None, tmp_path / "cache", "synthetic")
    drafter, _ = build_drafter("eagle3", {"checkpoint": "yuhuili/EAGLE3-tiny"}, env)
    source = env.artifacts["checkpoint_source"]
    assert source["repo"] == "yuhuili/EAGLE3-tiny" and source["revision"] == commit and len(source["sha256"]) == 64
    assert env.artifacts["checkpoint"]["draft_vocab"] == 24 and drafter.feature_layers == reference_layers(2)
    prompt = [3, 1, 4, 1, 5, 9]
    gen = Engine(target, stop_ids=set()).generate(prompt, drafter, 20)
    assert gen.output_ids == greedy_reference(target, prompt, 20)
    kept = set((torch.arange(24) + drafter.layer.d2t.cpu()).tolist())
    drafter.begin(prompt)
    tree = drafter.propose(DraftContext(prompt + [2], 6, torch.randn(32), 4, torch.randn(6, 32),
                                        layer_states=torch.randn(6, 3, 32)))
    assert tree is not None and set(tree.tokens) <= kept


CORPUS = "tiny_eagle3_echo"
_CYCLE = "abcdefgh "
_ECHO: list[str] = []  # the tiny target's own greedy continuations, filled on first use


@pytest.mark.parametrize("draft_vocab", [0, 12])
def test_self_distillation_learns_and_stays_lossless(tmp_path, draft_vocab: int) -> None:
    from specbench.datastore import corpora
    from specbench_methods.eagle3.train import Eagle3TrainConfig, train_eagle3
    from test_golden import char_tokenizer
    from test_sps_distill import tied_tiny_target

    target, tok = tied_tiny_target(), char_tokenizer()
    corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: (("", t) for t in list(_ECHO)))
    if not _ECHO:
        engine = Engine(target, stop_ids=set())
        for i in range(40):
            prompt = tok((_CYCLE * 3)[i % 9 :][: 8 + i % 5], add_special_tokens=False)["input_ids"]
            _ECHO.append(tok.decode(prompt + engine.generate(prompt, None, 48).output_ids))
    recipe = dict(tokens=1500, ttt_steps=3, draft_vocab=draft_vocab, window=32, batch_size=128, max_seq_len=64,
                  heldout_every=4)
    metrics = train_eagle3(target, tok, [CORPUS], None, tmp_path, Eagle3TrainConfig(epochs=8, lr=1e-2, **recipe), "tiny",
                           progress=False)
    untrained = train_eagle3(target, tok, [CORPUS], None, tmp_path / "zero", Eagle3TrainConfig(epochs=1, lr=1e-12, **recipe),
                             "tiny", progress=False)
    steps, before = metrics["heldout_top1_steps"], untrained["heldout_top1_steps"]
    assert len(steps) == 3 and all(a > b + 0.2 for a, b in zip(steps, before))  # every unrolled depth learnt
    layer, layers, meta = load_draft(tmp_path, target)
    assert layers == (0, 1, 1) and meta["metrics"]["heldout_top1"] == steps[0]
    assert layer.lm_head.weight.shape[0] == (draft_vocab or 64) and int(layer.t2d.sum()) == (draft_vocab or 64)
    prompt = tok("abc def gh", add_special_tokens=False)["input_ids"]
    gen = Engine(target, stop_ids=set()).generate(prompt, Eagle3Drafter(layer, layers, Eagle3Config()), 30)
    assert gen.output_ids == greedy_reference(target, prompt, 30)
    assert gen.forward_passes < 15  # drafts were accepted: fewer than half as many forwards as tokens


def test_spec_bench_preset_runs_eagle3_as_its_script() -> None:
    """``--preset spec-bench``: inference_eagle3's tree (60 tokens with the root, depth 5, top-10) and, for
    Vicuna-13B, the published draft eval.sh names."""
    from test_spec_bench_preset import _config

    cfg = _config("--preset", "spec-bench", "--model", "lmsys/vicuna-13b-v1.3", "--device", "cpu", "--methods", "eagle3")
    assert cfg.method_options["eagle3"] == {"top_k": 10, "depth": 5, "total_tokens": 59,
                                            "checkpoint": "yuhuili/EAGLE3-Vicuna1.3-13B"}
    seven = _config("--preset", "spec-bench", "--model", "lmsys/vicuna-7b-v1.3", "--device", "cpu", "--methods", "eagle3")
    assert "checkpoint" not in seven.method_options["eagle3"]  # no published EAGLE-3 draft for Vicuna-7B


def test_feature_store_keeps_the_asked_layers_in_a_store_of_their_own(tmp_path) -> None:
    """A store asked for ``layers`` keeps those hidden states per response position; one asked for none keeps
    none, under another key, so the other drafters' store is not EAGLE-3's."""
    from specbench.datastore import corpora
    from specbench.training.feature_store import FeatureStore
    from test_golden import char_tokenizer

    target, tok = make_tiny_model("llama", seed=2), char_tokenizer()
    corpora.PAIR_LOADERS.setdefault("tiny_eagle3_plain", lambda data_dir: (("", "abcabc def " * 3) for _ in range(6)))

    def store(layers):
        return FeatureStore.open(target, tok, ["tiny_eagle3_plain"], None, model_id="tiny", max_seq_len=40,
                                 layers=layers, root=tmp_path)

    plain = store(()).data(60, 1, progress=False)
    assert plain.layer_states is None and json.loads((store(()).path / "key.json").read_text())["layers"] == []
    deep_store = store((2, 0, 1))
    deep = deep_store.data(60, 1, progress=False)
    assert deep_store.path != store(()).path and json.loads((deep_store.path / "key.json").read_text())["layers"] == [2, 0, 1]
    assert deep.layer_states.shape == (len(deep.tokens), 3, 32) and deep.layer_states.dtype == torch.float16
    first = deep.tokens[:33]  # the first sequence (33 tokens, no prompt: every position is a response row)
    with torch.inference_mode():
        states = target.base_model(input_ids=first[None], output_hidden_states=True).hidden_states
    for j, index in enumerate((2, 0, 1)):
        torch.testing.assert_close(deep.layer_states[:33, j].float(), states[index][0], atol=2e-3, rtol=2e-3)
    torch.testing.assert_close(deep.layer_states[:33, 0].float(), deep.hidden[:33].float())  # index 2 = final norm
    again = store((2, 0, 1))
    assert torch.equal(again.data(60, 1, progress=False).layer_states, deep.layer_states) and again.forwards == 0
