"""EAGLE: the tree builders on constructed scores, the draft layer's cache and tree masks against a plain
forward, checkpoints (ours and the reference's), self-distillation on a tiny target, losslessness."""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from conftest import make_tiny_model
from specbench_methods.eagle.checkpoint import load_layer, save_layer
from specbench_methods.eagle import method as eagle_method
from specbench_methods.eagle.layer import DraftCache, EagleLayer, LayerShape, causal_chunks
from specbench_methods.eagle.method import DraftHead, EagleConfig, EagleDrafter
from specbench_methods.eagle.train import EagleTrainConfig, runs, train_eagle
from specbench_methods.eagle.tree import EAGLE1_TREE, dynamic_tree, select_best, static_tree
from specbench.datastore import corpora
from specbench.errors import ConfigError
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree
from test_engine_exact import greedy_reference
from test_golden import char_tokenizer
from test_sps_distill import tied_tiny_target

CORPUS = "tiny_eagle_echo"
_CYCLE = "abcdefgh "
_ECHO: list[str] = []  # the tiny target's own greedy continuations, filled on first use
corpora.PAIR_LOADERS.setdefault(CORPUS, lambda data_dir: (("", t) for t in list(_ECHO)))


def _echo_corpus(target, tok) -> None:
    """Text the draft sees at decode time: the target continuing periodic prompts greedily."""
    if not _ECHO:
        engine = Engine(target, stop_ids=set())
        for i in range(40):
            prompt = tok((_CYCLE * 3)[i % 9 :][: 8 + i % 5], add_special_tokens=False)["input_ids"]
            _ECHO.append(tok.decode(prompt + engine.generate(prompt, None, 48).output_ids))


def _logp(values: dict[int, float], vocab: int = 8) -> torch.Tensor:
    out = torch.full((vocab,), -50.0)
    for tok, v in values.items():
        out[tok] = v
    return out


def test_dynamic_tree_worked_example() -> None:
    """The module docstring's example: a=1, b=2, c..f=3..6."""
    calls: list[list[int]] = []

    def expand(nodes, toks, parents):
        calls.append(list(toks))
        return torch.stack([_logp({3: -0.1, 4: -2.9}) if t == 1 else _logp({5: -0.5, 6: -0.7}) for t in toks])

    tree = dynamic_tree(_logp({1: -0.1, 2: -1.0}), expand, top_k=2, depth=1, total=3, max_depth=8)
    assert tree == DraftTree((1, 2, 3), (-1, -1, 0))
    assert calls == [[1, 2]]
    # a second expansion runs the best 2 of the 4 depth-2 candidates (c -0.2 and e -1.5), never d
    calls.clear()
    deeper = dynamic_tree(_logp({1: -0.1, 2: -1.0}), expand, top_k=2, depth=2, total=10, max_depth=8)
    assert calls == [[1, 2], [3, 5]] and len(deeper) == 2 + 4 + 4
    assert max(deeper.depths()) == 3
    # max_depth caps the expansions (the engine's token budget)
    calls.clear()
    assert max(dynamic_tree(_logp({1: -0.1, 2: -1.0}), expand, 2, 5, 10, max_depth=1).depths()) == 1 and calls == []


def test_select_best_keeps_every_ancestor_on_ties() -> None:
    # node 1 (child of 0) ties its parent; node 2 is a better-scoring orphan of unkept node 3: skipped
    tree = select_best([7, 8, 9, 4], [-1, 0, 3, -1], [-0.5, -0.5, -0.6, -0.9], 2)
    assert tree == DraftTree((7, 8), (-1, 0))


def test_static_tree_is_eagle1s_25_node_tree() -> None:
    expanded: list[int] = []

    def expand(nodes, toks, parents):
        expanded.extend(nodes)
        return torch.stack([_logp({10 + r: -float(r) for r in range(4)}, 16) for _ in nodes])

    tree = static_tree(_logp({r: -float(r) for r in range(4)}, 16), expand, EAGLE1_TREE, max_depth=10)
    assert len(tree) == 25 and max(tree.depths()) == 5
    assert tree.tokens[:4] == (0, 1, 2, 3) and set(tree.tokens[4:]) == {10, 11, 12}
    # only nodes with children in the tree are run: 4 + 4 + 1 + 1 of them
    assert len(expanded) == 10
    assert max(static_tree(_logp({0: 0.0}, 16), expand, EAGLE1_TREE, max_depth=2).depths()) == 2


def _layer(seed: int = 0) -> tuple[torch.nn.Module, EagleLayer]:
    target = make_tiny_model("llama", seed=1)
    torch.manual_seed(seed)
    layer = EagleLayer(LayerShape.from_config(target.config), target.get_input_embeddings()).eval()
    for p in layer.parameters():  # non-trivial weights everywhere (o_proj etc. included)
        p.data.normal_(0, 0.3)
    return target, layer


def _causal(n: int) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool).tril()


def test_cached_chunks_equal_one_full_forward() -> None:
    _, layer = _layer()
    feats, toks = torch.randn(10, 32), torch.randint(0, 64, (10,))
    full = layer(feats, toks, torch.arange(10), _causal(10))
    cache = DraftCache()
    a = layer(feats[:6], toks[:6], torch.arange(6), _causal(6), cache)
    b = layer(feats[6:], toks[6:], torch.arange(6, 10), torch.ones(4, 10, dtype=torch.bool).tril(6), cache)
    assert torch.allclose(torch.cat([a, b]), full, atol=1e-5)
    cache.truncate(6)
    again = layer(feats[6:], toks[6:], torch.arange(6, 10), torch.ones(4, 10, dtype=torch.bool).tril(6), cache)
    assert torch.allclose(again, b, atol=1e-6)


def test_context_read_in_slices_equals_one_pass() -> None:
    """A long prompt's rows fed ``causal_chunks`` at a time (bounded attention memory) give the features one
    pass gives, after rows already cached too."""
    _, layer = _layer()
    feats, toks = torch.randn(13, 32), torch.randint(0, 64, (13,))
    full = layer(feats, toks, torch.arange(13), _causal(13))
    cache = DraftCache()
    layer(feats[:3], toks[:3], torch.arange(3), _causal(3), cache)
    pos = torch.arange(3, 13)
    sliced = [layer(feats[3:][r], toks[3:][r], pos[r], m, cache) for r, m in causal_chunks(3, 10, rows=4)]
    assert [s.shape[0] for s in sliced] == [4, 4, 2] and cache.length == 13
    assert torch.allclose(torch.cat(sliced), full[3:], atol=1e-5)


def test_drafter_reading_the_prompt_in_slices_proposes_the_same_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    target, layer = _layer(seed=2)
    head = DraftHead(target.get_output_embeddings(), None)
    torch.manual_seed(5)
    tokens, feats = torch.randint(0, 64, (12,)).tolist(), torch.randn(11, 32)

    def propose() -> DraftTree | None:
        drafter = EagleDrafter(layer, head, EagleConfig(checkpoint="random", top_k=3, depth=3, total_tokens=12))
        drafter.begin(tokens[:-1])
        return drafter.propose(DraftContext(tokens, 11, feats[-1], 10, feats))

    whole = propose()
    monkeypatch.setattr(eagle_method, "causal_chunks", functools.partial(causal_chunks, rows=3))
    assert whole is not None and propose() == whole


def _chain_logp(layer: EagleLayer, head: DraftHead, ctx_feats: torch.Tensor, tokens: list[int], path: list[int]) -> torch.Tensor:
    """No cache, no tree: the context rows, then the path's rows fed their predecessor's output."""
    P = len(tokens) - 1
    feats, toks = ctx_feats, torch.tensor(tokens[1:])
    out = layer(feats, toks, torch.arange(P), _causal(P))
    for tok in path:
        feats = torch.cat([feats, out[-1:]])
        toks = torch.cat([toks, torch.tensor([tok])])
        n = feats.shape[0]
        out = layer(feats, toks, torch.arange(n), _causal(n))
    return head(out[-1:])[0]


@pytest.mark.parametrize("tree", ["static", "dynamic"])
def test_tree_rows_see_exactly_their_ancestors(tree: str) -> None:
    """Every node of a proposed tree is the draft's top choice (by rank) after its own path alone."""
    target, layer = _layer(seed=2)
    head = DraftHead(target.get_output_embeddings(), None)
    cfg = EagleConfig(checkpoint="random", tree=tree, top_k=3, depth=3, total_tokens=12)
    drafter = EagleDrafter(layer, head, cfg)
    torch.manual_seed(5)
    tokens = torch.randint(0, 64, (9,)).tolist()
    feats = torch.randn(8, 32)
    drafter.begin(tokens[:-1])
    proposed = drafter.propose(DraftContext(tokens, 8, feats[-1], 10, feats))
    assert proposed is not None and len(proposed) > 4 and max(proposed.depths()) >= 3
    assert drafter.cache.length == 8  # the tree's rows were dropped
    for node, (tok, parent) in enumerate(zip(proposed.tokens, proposed.parents)):
        path = []
        p = parent
        while p != -1:
            path.insert(0, proposed.tokens[p])
            p = proposed.parents[p]
        ranked = _chain_logp(layer, head, feats, tokens, path).topk(4).indices.tolist()
        assert tok in ranked[:4], (node, tok, ranked)
    if tree == "static":  # rank paths: the first level is exactly the top 4 in order
        assert list(proposed.tokens[:4]) == _chain_logp(layer, head, feats, tokens, []).topk(4).indices.tolist()


def test_runs_split_on_gaps_and_window() -> None:
    assert runs(torch.tensor([0, 1, 2, 3, 7, 8]), 3) == [(0, 3), (3, 1), (7, 2)]
    assert runs(torch.tensor([], dtype=torch.long), 4) == []


def test_checkpoints_ours_and_the_references(tmp_path) -> None:
    target, layer = _layer()
    save_layer(layer, np.array([1, 5, 9]), tmp_path / "ours", {"metrics": {"heldout_top1": 0.5}})
    loaded, vocab, meta = load_layer(tmp_path / "ours", target)
    x, t = torch.randn(3, 32), torch.tensor([1, 2, 3])
    assert torch.allclose(loaded.eval()(x, t, torch.arange(3), _causal(3)), layer(x, t, torch.arange(3), _causal(3)))
    assert vocab.tolist() == [1, 5, 9] and meta["metrics"]["heldout_top1"] == 0.5
    # the reference's layout: a Llama config + model.safetensors with the same names and the embedding
    ref = tmp_path / "ref"
    ref.mkdir()
    state = {k: v.clone() for k, v in layer.state_dict().items()} | {"embed_tokens.weight": torch.zeros(64, 32)}
    save_file(state, str(ref / "model.safetensors"))
    cfg = {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 64,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0}
    (ref / "config.json").write_text(json.dumps(cfg))
    from_ref, none_vocab, _ = load_layer(ref, target)
    assert none_vocab is None
    assert torch.allclose(from_ref.eval()(x, t, torch.arange(3), _causal(3)), layer(x, t, torch.arange(3), _causal(3)), atol=1e-6)
    (ref / "model.safetensors").unlink()
    torch.save(state, ref / "pytorch_model.bin")  # read through torch.load(weights_only=True)
    assert load_layer(ref, target)[0] is not None
    with pytest.raises(ConfigError, match="does not fit"):
        (ref / "config.json").write_text(json.dumps(cfg | {"hidden_size": 48, "intermediate_size": 96}))
        load_layer(ref, target)
    (ref / "config.json").write_text(json.dumps(cfg))
    save_file({"midlayer.fc.weight": torch.zeros(2, 2)}, str(ref / "model.safetensors"))
    with pytest.raises(ConfigError, match="EAGLE-3"):
        load_layer(ref, target)
    with pytest.raises(ConfigError, match="no config.json"):
        load_layer(tmp_path / "missing", target)


@pytest.mark.parametrize("draft_vocab", [0, 12])
def test_self_distillation_learns_and_stays_lossless(tmp_path, draft_vocab: int) -> None:
    target, tok = tied_tiny_target(), char_tokenizer()
    _echo_corpus(target, tok)
    cfg = EagleTrainConfig(tokens=1500, epochs=8, draft_vocab=draft_vocab, window=32, batch_size=128, lr=1e-2,
                           max_seq_len=64, heldout_every=4)
    metrics = train_eagle(target, tok, [CORPUS], None, tmp_path, cfg, "tiny", progress=False)
    untrained = train_eagle(target, tok, [CORPUS], None, tmp_path / "zero",
                            EagleTrainConfig(tokens=1500, epochs=1, draft_vocab=draft_vocab, window=32, batch_size=128,
                                             lr=1e-12, max_seq_len=64, heldout_every=4), "tiny", progress=False)
    assert metrics["heldout_top1"] > untrained["heldout_top1"] + 0.2
    layer, vocab, _ = load_layer(tmp_path, target)
    assert (vocab is None) == (draft_vocab == 0)
    prompt = tok("abc def gh", add_special_tokens=False)["input_ids"]
    for tree in ("dynamic", "static"):
        drafter = EagleDrafter(layer, DraftHead(target.get_output_embeddings(), vocab), EagleConfig(tree=tree))
        gen = Engine(target, stop_ids=set()).generate(prompt, drafter, 30)
        assert gen.output_ids == greedy_reference(target, prompt, 30)
        assert gen.forward_passes < 20  # drafts were accepted: fewer forwards than tokens


def test_bad_options_are_refused() -> None:
    with pytest.raises(ConfigError, match="tree must be"):
        EagleConfig(tree="bushy").validate()
    with pytest.raises(ConfigError, match="top_k"):
        EagleConfig(top_k=0).validate()
    with pytest.raises(ConfigError, match="draft_vocab"):
        EagleTrainConfig(draft_vocab=1).validate()
