"""SWIFT (``methods/swift``) and what the engine gives it: the skipped-layer forward (``engine/backends/layer_skip.py``), the
target as a draft over the generation's cache (``engine/backends/self_draft.py``), the layer search, the confidence tree, and
exactness on the four tiny families (greedy on both torch backends, batched, sampled)."""
from __future__ import annotations

import copy
import doctest
import random
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import DynamicCache

from conftest import make_tiny_model
from test_sampling_lossless import N_SAMPLES, SAMPLING, chi_square_pvalue, exact_distribution
from specbench.engine.backends import layer_skip
from specbench.engine.backends.batch_cache import BatchedCache
from specbench.engine.batch_inputs import batch_inputs
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.budget.auto_budget import AutoBudget
from specbench.engine.backends.kv_cache import PreallocatedCache
from specbench.engine.backends.layer_skip import SkipSet
from specbench.engine.loop import Engine
from specbench.engine.backends.self_draft import SelfDraft
from specbench.engine.step import check_self_draft
from specbench.engine.backends.target import TargetModel
from specbench.engine.tree import CompiledTree
from specbench.errors import ConfigError
from specbench_methods.swift import layer_search, method
from specbench_methods.swift.layer_search import LayerSearch, parse_skip, skip_text
from specbench_methods.swift.method import SwiftConfig, SwiftDrafter, confidence_tree

FAMILIES = ["llama", "qwen2", "gpt2", "neox"]
LAYERS = 6
# the output projection of each family's attention and MLP: zeroed, the sub-layer adds nothing (as when skipped)
OUTPUT_PROJECTIONS = {"llama": ("self_attn.o_proj", "mlp.down_proj"), "qwen2": ("self_attn.o_proj", "mlp.down_proj"),
                      "gpt2": ("attn.c_proj", "mlp.c_proj"), "neox": ("attention.dense", "mlp.dense_4h_to_h")}
SKIP = SkipSet(attention=(1, 4), mlp=(2, 4))


def _zeroed_copy(model: torch.nn.Module, family: str, skip: SkipSet) -> torch.nn.Module:
    out = copy.deepcopy(model)
    layers = layer_skip.decoder_layers(out)
    attn, mlp = OUTPUT_PROJECTIONS[family]
    with torch.no_grad():
        for names, idx in ((attn, skip.attention), (mlp, skip.mlp)):
            for i in idx:
                for p in layers[i].get_submodule(names).parameters():
                    p.zero_()
    return out


def _causal(n_ctx: int, n: int) -> torch.Tensor:
    return torch.ones(n, n_ctx + n, dtype=torch.bool).tril(n_ctx)


@pytest.mark.parametrize("family", FAMILIES)
def test_skipped_forward_equals_zeroed_output_projections(family: str) -> None:
    model = make_tiny_model(family, seed=2, layers=LAYERS)
    ids = torch.tensor([[3, 9, 27, 5, 11, 40, 2]])
    target = TargetModel(model)
    with torch.inference_mode():
        skipped = target.run_skipping(ids, DynamicCache(config=model.config), torch.arange(7), _causal(0, 7), SKIP)
        zeroed = TargetModel(_zeroed_copy(model, family, SKIP)).run(ids, DynamicCache(config=model.config), 0).logits
        whole = target.run(ids, DynamicCache(config=model.config), 0).logits
    torch.testing.assert_close(skipped, zeroed, rtol=1e-5, atol=1e-5)
    assert (skipped - whole).abs().max() > 1e-3  # skipping changed something, and was undone on exit


def test_skipping_is_undone_after_an_error_and_checks_its_layers() -> None:
    model = make_tiny_model("llama", seed=2, layers=LAYERS)
    attn = layer_skip.decoder_layers(model)[1].self_attn
    with pytest.raises(RuntimeError, match="boom"):
        with layer_skip.skipping(model, SKIP):
            assert "forward" in attn.__dict__
            raise RuntimeError("boom")
    assert "forward" not in attn.__dict__
    with pytest.raises(ValueError, match=r"skipped layers \[6\] out of range: this target has decoder layers 0..5"):
        with layer_skip.skipping(model, SkipSet(mlp=(6,))):
            pass


@pytest.mark.parametrize("make_cache", [lambda m: DynamicCache(config=m.config), lambda m: PreallocatedCache(4)],
                         ids=["dynamic", "preallocated"])
def test_self_draft_extends_scores_and_rewinds(make_cache) -> None:
    """``extend`` one token at a time equals one forward over the chain; ``score`` sees only its ``start`` columns
    (equal to a cache that holds just those); after ``rewind`` the cache holds the context again."""
    model = make_tiny_model("llama", seed=2, layers=LAYERS)
    target = TargetModel(model)
    prompt, chain = [3, 9, 27, 5, 11, 40, 2, 8], [12, 30, 7]
    with torch.inference_mode():
        cache = make_cache(model)
        target.run(torch.tensor([prompt]), cache, 0)
        view = SelfDraft(target, cache, len(prompt))
        steps = torch.cat([view.extend([t], SKIP) for t in chain])
        with pytest.raises(ValueError, match="one skip set"):
            view.extend([1], SkipSet())
        view.rewind()
        assert _lengths(cache) == {len(prompt)} and view.drafted == 0  # every layer, the skipped ones too
        at_once = view.extend(chain, SKIP)
        view.rewind()
        torch.testing.assert_close(steps, at_once, rtol=1e-5, atol=1e-5)
        scored = view.score(chain, 5, SKIP)  # sees prompt[:5] only
        assert _lengths(cache) == {len(prompt)}
        short = make_cache(model)
        target.run(torch.tensor([prompt[:5]]), short, 0)
        expected = SelfDraft(target, short, 5).extend(chain, SKIP)
        torch.testing.assert_close(scored, expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(view.score(chain, len(prompt), SKIP), at_once, rtol=1e-5, atol=1e-5)
        view.extend([1], SKIP)
        with pytest.raises(ValueError, match="before a step's draft"):
            view.score(chain, 5, SKIP)


def _lengths(cache) -> set[int]:
    return {int(layer.get_seq_length()) for layer in cache.layers}


def test_a_slot_of_the_batched_cache_drafts_as_a_single_sequence() -> None:
    """The view over one slot of a ``BatchedCache`` gives the logits of the view over that sequence alone, for
    ``extend`` and ``score``, and leaves the slots' lengths alone."""
    model = make_tiny_model("qwen2", seed=2, layers=LAYERS)
    target = TargetModel(model)
    prompts, chain = [[3, 9, 27, 5, 11], [40, 2, 8, 12, 30, 7, 1, 19]], [12, 30, 7]
    with torch.inference_mode():
        batched = BatchedCache(2, 16)
        for slot, p in enumerate(prompts):
            plan = batched.plan_step(slot, slot + 1, len(p), target.device)
            compiled = CompiledTree(torch.tensor([p]), None, None, [], [])
            ids, pos, mask = batch_inputs([compiled], [0], plan.span, target.device, target.dtype)
            target.run_batch(ids, batched, pos, mask)
            batched.keep(slot, [list(range(len(p)))])
        single = PreallocatedCache(4)
        target.run(torch.tensor([prompts[1]]), single, 0)
        slot_view, alone = SelfDraft(target, batched, len(prompts[1]), slot=1), SelfDraft(target, single, len(prompts[1]))
        torch.testing.assert_close(slot_view.score(chain, 4, SKIP), alone.score(chain, 4, SKIP), rtol=1e-5, atol=1e-5)
        steps = [(slot_view.extend([t], SKIP), alone.extend([t], SKIP)) for t in chain]
        for got, want in steps:
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        slot_view.rewind()
    assert batched.lengths == [len(p) for p in prompts]


def _generate_all(engine: Engine, prompts: list[list[int]], drafter, n: int, **kw) -> list[list[int]]:
    return [engine.generate(p, drafter, n, **kw).output_ids for p in prompts]


@pytest.mark.parametrize("family", FAMILIES)
def test_swift_equals_ar_on_both_torch_backends(family: str) -> None:
    model = make_tiny_model(family, seed=1, layers=LAYERS)
    rng = random.Random(0)
    prompts = [[rng.randrange(64) for _ in range(rng.randint(3, 12))] for _ in range(3)]
    for backend in ("reference", "fast"):
        engine = Engine(model, set(), backend=backend)
        ar = _generate_all(engine, prompts, None, 40)
        drafter = SwiftDrafter(SwiftConfig(context_window=6, bayes_interval=0, stop_threshold=0.02))
        assert _generate_all(engine, prompts, drafter, 40) == ar, backend
        gen = engine.generate(prompts[0], drafter, 40)
        assert sum(gen.draft_sizes) > 0 and max(gen.accept_lengths) > 1  # drafts were made and accepted
        state = gen.drafter_state
        assert state["search_iterations"] > 0 and state["skipped"] == 3  # int(2 * 4 * 0.45) of 8 sub-layers
        fixed = SwiftDrafter(SwiftConfig(), parse_skip("attn:1,3/mlp:2", LAYERS))
        assert _generate_all(engine, prompts, fixed, 40) == ar
        assert engine.generate(prompts[0], fixed, 8).drafter_state["skip"] == "attn:1,3/mlp:2"
        auto = _generate_all(engine, prompts, SwiftDrafter(SwiftConfig(context_window=6, bayes_interval=0)), 40,
                             budget=AutoBudget(lambda n, context=None: 1.0 + 0.1 * (np.asarray(n) - 1),
                                                      calibrate=False))
        assert auto == ar


@pytest.mark.parametrize("family", ["llama", "neox"])
def test_swift_batched_equals_ar_alone(family: str) -> None:
    model = make_tiny_model(family, seed=1, layers=LAYERS)
    rng = random.Random(1)
    prompts = [[rng.randrange(4, 64) for _ in range(rng.randint(2, 16))] for _ in range(5)]
    engine = Engine(model, set())
    ar = _generate_all(engine, prompts, None, 24)
    for width, refill in [(2, False), (3, True)]:
        drafters = [SwiftDrafter(SwiftConfig(context_window=6, bayes_interval=0, stop_threshold=0.02))
                    for _ in range(width)]
        gens = BatchDecoder(engine, 24).generate([Request(p) for p in prompts], drafters, width, refill)
        assert [g.output_ids for g in gens] == ar, (width, refill)
        assert any(max(g.accept_lengths) > 1 for g in gens)


def test_swift_samples_ar_distribution() -> None:
    """At temperature > 0 its deterministic tree is accepted by the engine's rejection sampling: the first tokens
    follow AR sampling's exact distribution (chi-square, as ``test_sampling_lossless.py``)."""
    from test_sampling_lossless import LENGTH

    model = make_tiny_model("llama", seed=3, layers=LAYERS)
    prompt = [5, 17, 33, 8, 21]
    engine = Engine(model, set())
    exact = exact_distribution(model, prompt, set())
    drafter = SwiftDrafter(SwiftConfig(stop_threshold=0.0, max_step_draft=LENGTH))
    counts: dict = {}
    accepted = 0
    for seed in range(N_SAMPLES):
        gen = engine.generate(prompt, drafter, LENGTH, sampling=SAMPLING, seed=seed)
        counts[tuple(gen.output_ids)] = counts.get(tuple(gen.output_ids), 0) + 1
        accepted += sum(a - 1 for a in gen.accept_lengths)
    from collections import Counter

    assert chi_square_pvalue(Counter(counts), exact) >= 1e-3
    assert accepted > 0


def test_layer_search_candidates_and_stop_rules() -> None:
    s = LayerSearch(10, skip_ratio=0.45, bayes_interval=0, max_tolerance_iter=3, seed=0)
    assert (s.slots, s.count) == (8, 7)
    for _ in range(20):
        c = s.candidate()
        assert c.count == 7 and all(0 < i < 9 for i in c.attention + c.mlp)  # first and last layer kept
    s.report(s.candidate(), 0.4)
    best = s.best
    for _ in range(4):  # no better score: the best is kept, and after max_tolerance_iter the search stops
        s.report(s.candidate(), 0.1)
    assert s.best == best and not s.active and s.stopped == "tolerance"
    high = LayerSearch(10, max_score=0.5, bayes_interval=0)
    high.report(high.candidate(), 0.6)
    assert not high.active and high.state()["stopped"] == "score"
    capped = LayerSearch(10, max_opt_iter=2, bayes_interval=0)
    for score in (0.1, 0.2, 0.3):
        capped.report(capped.candidate(), score)
    assert capped.stopped == "iterations" and capped.best_score == 0.3
    assert not LayerSearch(2).active and LayerSearch(2).stopped == "off"  # nothing to skip on 2 layers


def test_layer_search_asks_the_optimiser_every_bayes_interval() -> None:
    class Fake:
        def __init__(self) -> None:
            self.registered = []

        def suggest(self):
            return {f"x{i}": v for i, v in enumerate([0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.95, 0.0])}

        def register(self, params, target):
            self.registered.append((params, target))

    s = LayerSearch(6, skip_ratio=0.5, bayes_interval=3, seed=1)
    s._optimizer = Fake()
    picks = []
    for i in range(3):
        c = s.candidate()
        picks.append(c)
        s.report(c, 0.1 * i)
    # the third candidate is the optimiser's: its 4 largest coordinates x6, x0, x2, x4 -> attention 1, 3 and MLP 1, 3
    assert picks[2] == SkipSet((1, 3), (1, 3))
    assert [t for _, t in s._optimizer.registered] == [0.0, 0.1, 0.2]
    assert set(s._optimizer.registered[0][0].values()) <= {0.0, 1.0}  # random candidates registered as 0/1 points


def test_real_optimiser_suggests_a_valid_set() -> None:
    pytest.importorskip("bayes_opt")
    s = LayerSearch(5, skip_ratio=0.5, bayes_interval=2, seed=0)
    c = s.candidate()
    s.report(c, 0.3)
    c2 = s.candidate()  # the optimiser's, after one registered point
    assert c2.count == s.count == 3 and all(0 < i < 4 for i in c2.attention + c2.mlp)


def test_confidence_tree_by_hand() -> None:
    topk = [list(range(10, 20)), list(range(20, 30)), list(range(30, 40))]
    tree = confidence_tree(topk, [0.97, 0.85, 0.6])
    assert len(tree) == 3 + 5 + 8
    assert tree.tokens[:3] == (10, 11, 12) and tree.parents[:3] == (-1, -1, -1)
    assert tree.tokens[3:8] == (20, 21, 22, 23, 24) and set(tree.parents[3:8]) == {0}
    assert tree.tokens[8:] == tuple(range(30, 38)) and set(tree.parents[8:]) == {3}
    assert tree.depth == 3
    assert len(confidence_tree(topk, [0.97, 0.85, 0.6], sampled=True)) == 1 + 3 + 5


def test_skip_option_parses_and_refuses_bad_sets() -> None:
    assert parse_skip("attn:1,3/mlp:2,4", 6) == SkipSet((1, 3), (2, 4))
    assert skip_text(parse_skip("mlp:2", 6)) == "attn:/mlp:2"
    with pytest.raises(ConfigError, match="only 1..4 may be skipped"):
        parse_skip("attn:0", 6)
    with pytest.raises(ConfigError, match="attn:LAYERS/mlp:LAYERS"):
        parse_skip("ffn:2", 6)
    with pytest.raises(ConfigError, match="integers"):
        parse_skip("attn:a", 6)
    with pytest.raises(ConfigError, match="skip_ratio"):
        SwiftConfig(skip_ratio=1.0).validate()


def test_a_backend_that_cannot_skip_layers_refuses_in_one_line() -> None:
    target = SimpleNamespace(caps=SimpleNamespace(skips_layers=False))
    with pytest.raises(ConfigError, match=r"cannot run \(it runs the graph whole: llama.cpp, compiled\); use --backend fast$"):
        check_self_draft(target, SwiftDrafter(SwiftConfig()))
    check_self_draft(target, None)  # AR needs nothing
    from specbench.engine.backends.llamacpp.spec import LLAMACPP
    from specbench.engine.backends.registry import backend_spec

    assert not LLAMACPP.caps.skips_layers and backend_spec("fast").caps.skips_layers  # (the torch targets' caps)


def test_missing_bayes_extra_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "bayes_opt", None)  # (import then raises ImportError)
    with pytest.raises(ConfigError, match=r"specbench\[swift\].*swift.bayes_interval=0"):
        layer_search.require_bayes_opt()


def test_doctests() -> None:
    for module in (layer_search, method, layer_skip):
        assert doctest.testmod(module).failed == 0, module.__name__
    assert doctest.testmod(layer_search).attempted >= 5


def test_report_shows_each_subtasks_last_drafter_state(tmp_path) -> None:
    """A run's report ends with the state each self-reporting drafter was left in, per subtask (the last record);
    a run without one has no such section."""
    import dataclasses

    from test_stats import fake_record
    from specbench.reports.report import render
    from specbench.results.loaded_run import Run

    ar = [fake_record("ar", "gsm8k", q, 1, 0, [5, 6], 0.2, [1, 1], [0, 0], None) for q in ("1", "2")]
    sw = [dataclasses.replace(fake_record("swift", "gsm8k", q, 1, 0, [5, 6], 0.1, [1, 1], [0, 1], "exact"),
                              drafter_state={"skip": f"attn:{q}/mlp:", "matchness": 0.1 * int(q)}) for q in ("1", "2")]
    text = render(Run(tmp_path, {}, ar + sw))
    assert "### Drafter state at the end of each subtask" in text
    assert "| swift    | GSM8K     |             2 | attn:2/mlp: |         0.2 |" in text
    assert "Drafter state" not in render(Run(tmp_path, {}, ar))
