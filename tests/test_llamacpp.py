"""The llama.cpp backend on tiny GGUF models written in the test from the tiny transformers models: every row's
logits and hidden states equal transformers', the cache keeps exactly the accepted path after a rejection,
and the engine's output equals greedy decoding for random and oracle drafters, trees, chains, Lookahead's
auxiliary rows and a hidden-states-reading drafter (EAGLE). Skipped, with the reason, without llama-cpp-python."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from llamacpp_fixtures import needs_llamacpp, tiny_backend
from specbench_methods.eagle.method import DraftHead, EagleConfig, EagleDrafter
from specbench_methods.eagle.layer import EagleLayer, LayerShape
from specbench_methods.lookahead.method import LookaheadConfig, LookaheadDrafter
from specbench.engine.drafter import BaseDrafter
from specbench.engine.backends.kv_cache import trim_cache
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree, compile_tree
from specbench.engine.verify import accept_greedy
from test_aux_rows import AuxProbe
from test_engine_exact import OracleDrafter, RandomDrafter, greedy_reference, random_tree

pytestmark = needs_llamacpp
FAMILIES = ["llama", "qwen2"]  # the architectures the test writes as GGUF (llama's q/k permuted, qwen2's biases)


@pytest.fixture(scope="module", params=FAMILIES)
def tiny(request, tmp_path_factory):
    model = make_tiny_model(request.param, seed=3)
    return model, tiny_backend(model, tmp_path_factory.mktemp(request.param))


def _plain(model, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.inference_mode():
        out = model(torch.tensor([ids]), output_hidden_states=True)
    return out.logits[0, -1], out.hidden_states[-1][0, -1]  # the final-norm state at the last position


def test_tree_rows_and_trimmed_cache_match_plain_decoding(tiny) -> None:
    model, backend = tiny
    target = backend.target(model)
    rng = random.Random(0)
    for _ in range(6):
        prompt = [rng.randrange(64) for _ in range(rng.randint(3, 9))]
        cache = backend.new_cache(model, 64)
        _, logits = target.forward(torch.tensor([prompt]), cache, 0)
        root = int(logits[-1].argmax())
        tree = random_tree(rng, 64, max_nodes=14)
        c = compile_tree(root, tree, torch.device("cpu"))
        n_ctx = len(prompt)
        hidden, tree_logits = target.forward(c.input_ids, cache, n_ctx, c.position_offsets, c.ancestor_mask)
        for row in range(len(tree) + 1):  # every row sees exactly its root-to-node path
            want_logits, want_hidden = _plain(model, prompt + [root] + (tree.path_to(row - 1) if row else []))
            torch.testing.assert_close(tree_logits[row], want_logits, atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(hidden[row], want_hidden, atol=1e-4, rtol=1e-4)
        ver = accept_greedy(c, tree_logits, hidden)
        trim_cache(cache, n_ctx, ver.rows)
        assert cache.get_seq_length() == n_ctx + len(ver.rows)
        # the next pass after the trimmed cache sees prompt + root + accepted, and nothing of the rejected rows
        nxt = torch.tensor([[ver.bonus, 5]])
        _, after = target.forward(nxt, cache, cache.get_seq_length())
        kept = prompt + [root] + ver.accepted
        torch.testing.assert_close(after[0], _plain(model, kept + [ver.bonus])[0], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(after[1], _plain(model, kept + [ver.bonus, 5])[0], atol=1e-4, rtol=1e-4)


def test_rejecting_a_whole_tree_keeps_the_context_alone(tiny) -> None:
    model, backend = tiny
    target = backend.target(model)
    prompt = [1, 2, 3, 4]
    cache = backend.new_cache(model, 32)
    _, logits = target.forward(torch.tensor([prompt]), cache, 0)
    root = int(logits[-1].argmax())
    c = compile_tree(root, DraftTree((7, 8, 9, 10), (-1, 0, -1, 2)), torch.device("cpu"))
    target.forward(c.input_ids, cache, 4, c.position_offsets, c.ancestor_mask)
    trim_cache(cache, 4, [0])
    _, again = target.forward(torch.tensor([[11]]), cache, 5)
    torch.testing.assert_close(again[0], _plain(model, prompt + [root, 11])[0], atol=1e-4, rtol=1e-4)


def test_engine_equals_generate_for_any_drafter(tiny) -> None:
    model, backend = tiny
    engine = Engine(model, stop_ids=set(), backend=backend)
    rng = random.Random(7)
    for trial in range(2):
        prompt = [rng.randrange(64) for _ in range(6)]
        ref = greedy_reference(model, prompt, 30)
        assert engine.generate(prompt, None, 30).output_ids == ref
        assert engine.generate(prompt, RandomDrafter(trial, 64), 30).output_ids == ref
        oracle = engine.generate(prompt, OracleDrafter(ref, len(prompt)), 30)
        assert oracle.output_ids == ref
        assert oracle.accept_lengths[:-1] == [1] + [6] * (len(oracle.accept_lengths) - 2)  # chains kept whole


def test_lookahead_auxiliary_rows_predict_plain_decoding(tiny) -> None:
    model, backend = tiny
    engine = Engine(model, stop_ids=set(), backend=backend)
    prompt = [7, 3, 9, 3, 9, 4, 7, 3, 9, 1]
    expected = greedy_reference(model, prompt, 30)
    for with_tree in (True, False):
        probe = AuxProbe(model, seed=4, vocab=64, with_tree=with_tree)
        assert engine.generate(prompt, probe, 30).output_ids == expected
        assert probe.checked > 10
    drafter = LookaheadDrafter(LookaheadConfig(window=4, ngram=4, guess=4, pool_from_prompt=True))
    gen = engine.generate(prompt, drafter, 30)
    assert gen.output_ids == expected and max(gen.aux_sizes) == 4 * 3 - 1


class HiddenProbe(BaseDrafter):
    """Random trees; checks that the hidden states it is handed are the target's final-norm states."""

    def __init__(self, model, seed: int) -> None:
        self.model, self.rng, self.checked = model, random.Random(seed), 0

    def propose(self, ctx):
        states = ctx.hidden_states
        start = len(ctx.tokens) - 1 - states.shape[0]  # rows at positions start .. len - 2
        for i in range(states.shape[0]):
            want = _plain(self.model, ctx.tokens[: start + i + 1])[1]
            torch.testing.assert_close(states[i], want, atol=1e-4, rtol=1e-4)
            self.checked += 1
        torch.testing.assert_close(ctx.hidden, states[-1])
        return random_tree(self.rng, 64)


def test_hidden_states_reach_the_drafters_that_read_them(tiny) -> None:
    model, backend = tiny
    engine = Engine(model, stop_ids=set(), backend=backend)
    prompt = [5, 1, 4, 1, 5, 9, 2]
    ref = greedy_reference(model, prompt, 20)
    probe = HiddenProbe(model, 1)
    assert engine.generate(prompt, probe, 20).output_ids == ref and probe.checked >= 20
    blind = RandomDrafter(2, 64)
    blind.reads_hidden_states = False  # a token-only drafter: no hidden states asked of llama.cpp
    seen = []
    blind.observe = lambda result: None
    original = blind.propose
    blind.propose = lambda ctx: (seen.append(tuple(ctx.hidden_states.shape)), original(ctx))[1]
    assert engine.generate(prompt, blind, 20).output_ids == ref
    assert seen and all(shape[1] == 0 for shape in seen)


@pytest.mark.parametrize("tree", ["static", "dynamic"])
def test_eagle_with_a_random_checkpoint_stays_lossless(tmp_path, tree: str) -> None:
    model = make_tiny_model("llama", seed=1)
    backend = tiny_backend(model, tmp_path)
    torch.manual_seed(0)
    layer = EagleLayer(LayerShape.from_config(model.config), model.get_input_embeddings()).eval()
    drafter = EagleDrafter(layer, DraftHead(model.get_output_embeddings(), None),
                           EagleConfig(checkpoint="random", tree=tree, top_k=3, depth=3, total_tokens=12))
    prompt = [3, 1, 4, 1, 5, 9, 2, 6]
    ref = greedy_reference(model, prompt, 24)
    gen = Engine(model, stop_ids=set(), backend=backend).generate(prompt, drafter, 24)
    assert gen.output_ids == ref and max(gen.draft_sizes) > 4


def test_intermediate_layers_are_refused_in_one_line(tiny) -> None:
    model, backend = tiny

    class Layered(RandomDrafter):
        feature_layers = (1,)

    with pytest.raises(ValueError, match="final-norm hidden states only.*feature_layers"):
        Engine(model, set(), backend=backend).generate([1, 2, 3], Layered(0, 64), 4)


@pytest.mark.parametrize("dtype", ["q8_0", "q4_1", "bfloat16"])
def test_quantised_gguf_runs_lossless_against_its_own_ar(tmp_path, dtype: str) -> None:
    model = make_tiny_model("llama", seed=4)
    backend = tiny_backend(model, tmp_path, dtype)
    assert backend.full_precision == (dtype == "bfloat16") and backend.describe()["gguf"]["dtype"] == dtype
    from gguf import GGUFReader

    types = {t.tensor_type.name for t in GGUFReader(backend.gguf.path).tensors}
    assert {"bfloat16": "BF16"}.get(dtype, dtype.upper()) in types  # llama.cpp's quantiser wrote the matrices in that type
    engine = Engine(model, stop_ids=set(), backend=backend)
    prompt = [9, 8, 7, 6, 5]
    ar = engine.generate(prompt, None, 24).output_ids
    assert engine.generate(prompt, RandomDrafter(3, 64), 24).output_ids == ar
    assert engine.generate(prompt, OracleDrafter(ar, len(prompt)), 24).output_ids == ar


def test_forward_curve_and_profile_key_name_the_backend(tiny) -> None:
    from specbench.profiling.measure import measure_forward_curve

    model, backend = tiny
    curve = measure_forward_curve(model, 16, (1, 2, 4), repeats=1, warmup=0, backend=backend)
    assert sorted(curve) == [1, 2, 4] and all(t > 0 for t in curve.values())
    assert backend.key == f"llamacpp-{backend.threads}t"
    info = backend.describe()
    assert info["name"] == "llamacpp" and info["threads"] == 1 and info["library"]["max_sequences"] >= 64
    assert np.isfinite(curve[4])


def test_budget_auto_profiles_llamacpp_under_its_own_key(tiny, tmp_path) -> None:
    from types import SimpleNamespace

    from specbench.budget.auto_budget import AutoBudget
    from specbench.profiling.cost_profile import cached_cost_profile, cost_function

    model, backend = tiny
    lm = SimpleNamespace(model=model, model_id="tiny", model_hash="0123456789abcdef", dtype="float32",
                         device=torch.device("cpu"))
    prof, path = cached_cost_profile(lm, backend, tmp_path, quiet=True)
    fast, fast_path = cached_cost_profile(lm, "fast", tmp_path, quiet=True)
    assert list(prof["backends"]) == [backend.key] and list(fast["backends"]) == ["fast"] and path != fast_path
    engine = Engine(model, stop_ids=set(), backend=backend)
    prompt = [2, 7, 1, 8, 2, 8]
    ref = greedy_reference(model, prompt, 20)
    gen = engine.generate(prompt, RandomDrafter(5, 64), 20, budget=AutoBudget(cost_function(prof)))
    assert gen.output_ids == ref


def test_sampling_draws_what_the_transformers_backend_draws(tiny) -> None:
    from specbench.engine.sampling_config import SamplingConfig

    model, backend = tiny
    hot = SamplingConfig(temperature=0.9, top_k=20)
    prompt = [4, 4, 2, 8, 5]
    on_llama = Engine(model, set(), backend=backend).generate(prompt, None, 16, sampling=hot, seed=3)
    on_fast = Engine(model, set(), backend="fast").generate(prompt, None, 16, sampling=hot, seed=3)
    assert on_llama.output_ids == on_fast.output_ids  # same logits (to 1e-7), same seeded draws
    drafted = Engine(model, set(), backend=backend).generate(prompt, RandomDrafter(1, 64), 16, sampling=hot, seed=3)
    assert len(drafted.output_ids) == 16 and len(drafted.token_logprobs) == 16
