"""Distributional losslessness of speculative sampling: every method samples exactly AR's distribution.

On the golden test's tiny random Llama (vocab 64, character tokenizer; ``test_golden.tiny``) at
temperature 0.05, top-k 3, top-p 0.95 (sharp enough that drafts get accepted, wide enough that the first
three tokens take ~20 values), each method generates the first ``LENGTH`` tokens of one prompt
``N_SAMPLES`` times with generation seeds ``0..N_SAMPLES-1``. The counts of each 3-token output are
compared with AR's EXACT distribution, computed by enumerating every sequence with the model's processed
probabilities, by a chi-square goodness-of-fit test (cells with expected count < 5 merged into one;
p-value by the Wilson-Hilferty approximation). Each test rejects at ``ALPHA`` = 1e-3: the false-alarm
rate of one test, about 1.5% for the whole file's ~15 tests (all seeds are fixed, so a given checkout
passes or fails deterministically). A sequence the target cannot produce fails at once.

The same test must reject a deliberately broken rule (a rejection that does not remove the rejected
draft from the target's distribution: no residual), or it would prove nothing.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest
import torch

from specbench.conformance.distribution import chi_square_pvalue  # (check-method's test, the same here)
from specbench.engine.drafter import BaseDrafter, DraftContext, Proposal
from specbench.engine import sampling as engine_sampling
from specbench.engine.loop import Engine
from specbench.engine.sampling import Sampler
from specbench.engine.tree import DraftTree
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter
from specbench.paths import default_data_dir
from specbench.plugins.registry import METHODS
from specbench.engine.sampling_config import SamplingConfig
from test_golden import TINY_OPTIONS, tiny  # noqa: F401  (the fixture: tiny model, tokenizer, golden, cache)

SAMPLING = SamplingConfig(temperature=0.05, top_p=0.95, top_k=3)
LENGTH = 3
N_SAMPLES = 300
ALPHA = 1e-3
LONG_RUNS, LONG_TOKENS = 8, 24  # sampled generations that must accept a draft token (methods slow to start)
NO_ACCEPTANCE_ON_TINY: dict[str, str] = {}  # method -> why its drafts cannot be accepted on the tiny model (none)
PROMPT_ENTRY = 4  # the golden "echo" prompt: the model's own greedy text, so copy-based drafters propose


def exact_distribution(model: torch.nn.Module, prompt: list[int], stop: set[int]) -> dict[tuple[int, ...], float]:
    """P(first ``LENGTH`` tokens) of AR sampling, by enumerating every sequence the processing allows."""
    sampler = Sampler(SAMPLING, 0, torch.device("cpu"))
    dist: dict[tuple[int, ...], float] = {}

    def walk(prefix: list[int], prob: float) -> None:
        if len(prefix) == LENGTH or (prefix and prefix[-1] in stop):
            dist[tuple(prefix)] = prob
            return
        with torch.inference_mode():
            p = sampler.probs(model(torch.tensor([prompt + prefix])).logits[0, -1]).double()
        for tok in torch.nonzero(p).flatten().tolist():
            walk(prefix + [tok], prob * float(p[tok]))

    walk([], 1.0)
    return dist


def sample_counts(engine: Engine, prompt: list[int], drafter) -> tuple[Counter, int]:
    """(counts of the first ``LENGTH`` tokens over ``N_SAMPLES`` seeded generations, draft tokens accepted)."""
    counts: Counter = Counter()
    accepted = 0
    for seed in range(N_SAMPLES):
        gen = engine.generate(prompt, drafter, LENGTH, sampling=SAMPLING, seed=seed)
        counts[tuple(gen.output_ids)] += 1
        accepted += sum(a - 1 for a in gen.accept_lengths)
    return counts, accepted


def target_probs(model: torch.nn.Module, ctx: DraftContext, tokens: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return ctx.sampler.probs(model(torch.tensor([tokens])).logits[0, -1])


class WithTarget(BaseDrafter):
    """A test drafter that reads the target itself (a drafter holds what it drafts with; the engine hands none)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model


class OracleTree(WithTarget):
    """Deterministic tree: the target's two likeliest next tokens, each followed by its likeliest one."""

    def propose(self, ctx: DraftContext) -> DraftTree:
        top = target_probs(self.model, ctx, ctx.tokens).topk(2).indices.tolist()
        chains = [[t, int(target_probs(self.model, ctx, ctx.tokens + [t]).argmax())] for t in top]
        return DraftTree.from_chains(chains)


class RandomLikelyChain(WithTarget):
    """A chain of tokens picked at random (its own RNG) among the target's three likeliest."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__(model)
        self.rng = random.Random(0)

    def propose(self, ctx: DraftContext) -> DraftTree:
        chain: list[int] = []
        for _ in range(min(2, ctx.max_depth)):
            chain.append(self.rng.choice(target_probs(self.model, ctx, ctx.tokens + chain).topk(3).indices.tolist()))
        return DraftTree.chain(chain)


class SampledTree(WithTarget):
    """Samples two distinct root children from a flattened target distribution q (the second without
    replacement), each with one sampled child; passes those q's as ``draft_probs``."""

    def _q(self, ctx: DraftContext, tokens: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            return torch.softmax(self.model(torch.tensor([tokens])).logits[0, -1] / 0.1, -1)

    def propose(self, ctx: DraftContext) -> Proposal:
        gen = ctx.sampler.generator
        q1 = self._q(ctx, ctx.tokens)
        a = int(torch.multinomial(q1, 1, generator=gen))
        q2 = q1.clone()
        q2[a] = 0
        q2 /= q2.sum()
        b = int(torch.multinomial(q2, 1, generator=gen))
        rows, tokens, parents = [q1, q2], [a, b], [-1, -1]
        if ctx.max_depth >= 2:
            for i, t in enumerate((a, b)):
                q = self._q(ctx, ctx.tokens + [t])
                tokens.append(int(torch.multinomial(q, 1, generator=gen)))
                parents.append(i)
                rows.append(q)
        return Proposal(DraftTree(tuple(tokens), tuple(parents)), draft_probs=torch.stack(rows))


TEST_DRAFTERS = {"oracle_tree": OracleTree, "random_likely_chain": RandomLikelyChain, "sampled_tree": SampledTree}


@pytest.fixture(scope="module")
def setup(tiny, tmp_path_factory):  # noqa: F811
    """(engine, prompt, exact distribution, env factory, per-method options); SpS drafts with a perturbed
    copy of the target so that its q differs from p."""
    model, tok, golden, cache = tiny
    stop = set(golden["stop_ids"])
    prompt = golden["entries"][PROMPT_ENTRY]["prompt_ids"]
    draft = type(model)(model.config)
    draft.load_state_dict(model.state_dict())
    with torch.no_grad():
        for p in draft.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    draft_dir = tmp_path_factory.mktemp("sps_perturbed")
    draft.save_pretrained(draft_dir)
    tok.save_pretrained(draft_dir)
    options = {**TINY_OPTIONS, "sps": {"draft_model": str(draft_dir)}}

    def env() -> MethodEnv:
        return MethodEnv(model, tok, "tiny-llama-seed3", torch.device("cpu"), default_data_dir(), cache, "synthetic")

    return Engine(model, stop), prompt, exact_distribution(model, prompt, stop), env, options


def test_exact_distribution_is_a_distribution(setup) -> None:
    _engine, _prompt, exact, _env, _opts = setup
    assert abs(sum(exact.values()) - 1) < 1e-6  # float32 probabilities
    assert 8 <= len(exact) <= 27  # three tokens of at most three choices each


@pytest.mark.parametrize("method", METHODS.names())
def test_every_method_samples_ar_distribution(setup, method: str) -> None:
    engine, prompt, exact, env, options = setup
    drafter, _ = build_drafter(method, options.get(method, {}), env())
    counts, accepted = sample_counts(engine, prompt, drafter)
    p = chi_square_pvalue(counts, exact)
    assert p >= ALPHA, f"{method}: first {LENGTH} sampled tokens differ from AR's distribution (p = {p:.2e})"
    if method == "ar" or method in NO_ACCEPTANCE_ON_TINY:
        return
    if not accepted:  # e.g. lookahead verifies nothing before its window fills: check longer generations
        for seed in range(LONG_RUNS):
            gen = engine.generate(prompt, drafter, LONG_TOKENS, sampling=SAMPLING, seed=seed)
            accepted += sum(a - 1 for a in gen.accept_lengths)
    assert accepted > 0, f"{method} got no draft token accepted when sampling: acceptance is not exercised"


@pytest.mark.parametrize("name", sorted(TEST_DRAFTERS))
def test_drafting_test_drafters_sample_ar_distribution(setup, name: str) -> None:
    engine, prompt, exact, _env, _opts = setup
    counts, accepted = sample_counts(engine, prompt, TEST_DRAFTERS[name](engine.model))
    assert accepted > N_SAMPLES // 4  # these drafts really get accepted
    p = chi_square_pvalue(counts, exact)
    assert p >= ALPHA, f"{name}: p = {p:.2e}"


@pytest.mark.parametrize("name", ["oracle_tree", "pld"])
def test_broken_rule_is_caught(setup, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Accept-or-resample from the unchanged target distribution (no residual) over-weights drafted
    tokens: the same test must reject it (with a test drafter and with a registered method)."""
    engine, prompt, exact, env, options = setup
    monkeypatch.setattr(engine_sampling, "residual", lambda p, q, token: p)
    drafter = TEST_DRAFTERS[name](engine.model) if name in TEST_DRAFTERS else \
        build_drafter(name, options.get(name, {}), env())[0]
    counts, _ = sample_counts(engine, prompt, drafter)
    assert chi_square_pvalue(counts, exact) < ALPHA
