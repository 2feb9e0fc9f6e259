"""Exactness of one-pass tree verification and KV trimming on tiny random models (no download)."""
import random

import numpy as np
import pytest
import torch
from transformers import DynamicCache

from conftest import make_tiny_model
from specbench.engine.drafter import BaseDrafter
from specbench.budget.auto_budget import AutoBudget
from specbench.engine.backends.kv_cache import trim_cache
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree, compile_tree
from specbench.engine.backends.target import TargetModel
from specbench.engine.verify import accept_greedy

FAMILIES = ["llama", "qwen2", "gpt2", "neox"]


def random_tree(rng: random.Random, vocab: int, max_nodes: int = 12) -> DraftTree:
    n = rng.randint(1, max_nodes)
    parents = [rng.randint(-1, i - 1) for i in range(n)]
    return DraftTree(tuple(rng.randrange(vocab) for _ in range(n)), tuple(parents))


class RandomDrafter(BaseDrafter):
    def __init__(self, seed: int, vocab: int) -> None:
        self.rng, self.vocab = random.Random(seed), vocab

    def propose(self, ctx):
        return random_tree(self.rng, self.vocab)


class OracleDrafter(BaseDrafter):
    """Proposes the true AR continuation: everything must be accepted."""

    def __init__(self, reference: list[int], prompt_len: int, depth: int = 5) -> None:
        self.ref, self.plen, self.depth = reference, prompt_len, depth

    def propose(self, ctx):
        done = len(ctx.tokens) - self.plen
        nxt = self.ref[done : done + self.depth]
        return DraftTree.chain(nxt) if nxt else None


def greedy_reference(model, prompt: list[int], n: int) -> list[int]:
    out = model.generate(torch.tensor([prompt]), max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0)
    return out[0, len(prompt) :].tolist()


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_tree_logits_and_cache_match_sequential(family):
    model = make_tiny_model(family, seed=1)
    target = TargetModel(model)
    rng = random.Random(0)
    for trial in range(5):
        prompt = [rng.randrange(64) for _ in range(rng.randint(3, 9))]
        cache = DynamicCache(config=model.config)
        with torch.inference_mode():
            _, logits = target.forward(torch.tensor([prompt]), cache, 0)
            root = int(logits[-1].argmax())
            tree = random_tree(rng, 64)
            c = compile_tree(root, tree, torch.device("cpu"))
            n_ctx = len(prompt)
            hidden, tree_logits = target.forward(c.input_ids, cache, n_ctx, c.position_offsets, c.ancestor_mask)
            # every row's logits equal a plain forward over prompt + its root-to-node path
            for row in range(len(tree) + 1):
                path = [root] + (tree.path_to(row - 1) if row else [])
                plain = model(torch.tensor([prompt + path])).logits[0, -1]
                torch.testing.assert_close(tree_logits[row], plain, atol=1e-4, rtol=1e-4)
            ver = accept_greedy(c, tree_logits, hidden)
            trim_cache(cache, n_ctx, ver.rows)
            # the trimmed cache equals the cache of plainly decoding prompt + root + accepted tokens
            ref_cache = DynamicCache(config=model.config)
            model(torch.tensor([prompt + [root] + ver.accepted]), past_key_values=ref_cache, use_cache=True)
            assert cache.get_seq_length() == len(prompt) + 1 + len(ver.accepted)
            for got, want in zip(cache.layers, ref_cache.layers):
                torch.testing.assert_close(got.keys, want.keys, atol=1e-5, rtol=1e-4)
                torch.testing.assert_close(got.values, want.values, atol=1e-5, rtol=1e-4)


def test_trim_gathers_non_contiguous_rows():
    model = make_tiny_model("llama", seed=2)
    target = TargetModel(model)
    prompt = [1, 2, 3, 4]
    # two branches; force acceptance of the second branch (rows 0, 3, 4) by picking its tokens from the model
    cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        _, logits = target.forward(torch.tensor([prompt]), cache, 0)
        root = int(logits[-1].argmax())
        a = int(model(torch.tensor([prompt + [root]])).logits[0, -1].argmax())
        b = int(model(torch.tensor([prompt + [root, a]])).logits[0, -1].argmax())
        wrong = (a + 1) % 64
        tree = DraftTree((wrong, 5, a, b), (-1, 0, -1, 2))
        c = compile_tree(root, tree, torch.device("cpu"))
        hidden, lg = target.forward(c.input_ids, cache, len(prompt), c.position_offsets, c.ancestor_mask)
        ver = accept_greedy(c, lg, hidden)
        assert ver.rows == [0, 3, 4] and ver.accepted == [a, b]
        trim_cache(cache, len(prompt), ver.rows)
        ref = DynamicCache(config=model.config)
        model(torch.tensor([prompt + [root, a, b]]), past_key_values=ref, use_cache=True)
        for got, want in zip(cache.layers, ref.layers):
            torch.testing.assert_close(got.keys, want.keys, atol=1e-5, rtol=1e-4)


@pytest.fixture(params=["auto", "toy"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The default backend, and a backend defined only in the tests (``tests/toy_backend.py``) once registered."""
    if request.param == "toy":
        import toy_backend
        from specbench.engine.backends import registry as backend_registry

        monkeypatch.setitem(backend_registry._SPECS, "toy", toy_backend.SPECS["toy"])
    return request.param


@pytest.mark.parametrize("family", FAMILIES)
def test_engine_equals_generate_for_any_drafter(family, backend):
    model = make_tiny_model(family, seed=3)
    engine = Engine(model, stop_ids=set(), backend=backend)
    rng = random.Random(7)
    for trial in range(2):
        prompt = [rng.randrange(64) for _ in range(6)]
        ref = greedy_reference(model, prompt, 30)
        assert engine.generate(prompt, None, 30).output_ids == ref
        rand = engine.generate(prompt, RandomDrafter(trial, 64), 30)
        assert rand.output_ids == ref
        assert sum(rand.accept_lengths) == 30 == len(rand.output_ids)
        oracle = engine.generate(prompt, OracleDrafter(ref, len(prompt)), 30)
        assert oracle.output_ids == ref
        # the oracle's drafts are always fully accepted: 1 (prefill) then 6 per pass
        assert oracle.accept_lengths[:-1] == [1] + [6] * ((len(oracle.accept_lengths) - 2))
        # budget=auto keeps it exact: on a steep cost curve about a node of a random draft is kept (once
        # learned; the drafter proposes 6.5 on average), on a flat one the oracle's whole drafts
        steep = AutoBudget(lambda n, context=None: 1.0 + 0.3 * (np.asarray(n) - 1), calibrate=False)
        pruned = engine.generate(prompt, RandomDrafter(trial, 64), 30, budget=steep)
        assert pruned.output_ids == ref and np.mean(pruned.draft_sizes[5:]) < 1.5
        flat = AutoBudget(lambda n, context=None: 1.0 + 0.01 * (np.asarray(n) - 1), calibrate=False)
        whole = engine.generate(prompt, OracleDrafter(ref, len(prompt)), 30, budget=flat)
        assert whole.output_ids == ref and whole.accept_lengths[-2] == 6


def test_stop_rules_never_overshoot_and_cut_at_eos(backend):
    model = make_tiny_model("llama", seed=4)
    prompt = [3, 1, 4, 1, 5]
    ref = greedy_reference(model, prompt, 20)
    eos = ref[7]
    first = ref.index(eos)
    engine = Engine(model, stop_ids={eos}, backend=backend)
    for drafter in (None, OracleDrafter(ref, len(prompt), depth=8), RandomDrafter(1, 64)):
        out = engine.generate(prompt, drafter, 20).output_ids
        assert out == ref[: first + 1]
    plain = Engine(model, stop_ids=set(), backend=backend)
    for n in (1, 2, 5, 13):
        g = plain.generate(prompt, OracleDrafter(ref, len(prompt), depth=10), n)
        assert g.output_ids == ref[:n] and sum(g.accept_lengths) == n
