"""Speculative sampling's acceptance rule on constructed logits, the sampling settings and their errors.

Monte-Carlo checks use a fixed seed and ``TRIALS`` draws; each compares a frequency with its exact
value within 5 standard errors (false-alarm rate ~6e-7 per comparison; deterministic for a checkout).
"""
from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from conftest import make_tiny_model
from specbench.cli import main
from specbench.errors import ConfigError
from specbench.config.run_config import RunConfig
from specbench.engine.loop import Engine
from specbench.engine.sampling import Sampler, accept_sampled, residual
from specbench.engine.tree import DraftTree, compile_tree
from specbench.engine.sampling_config import SamplingConfig, generation_seed, manifest_sampling, sampling_label
from test_engine_exact import OracleDrafter, RandomDrafter, greedy_reference

CPU = torch.device("cpu")
TRIALS = 20000
T1 = SamplingConfig(temperature=1.0)


def logits_of(*rows: list[float]) -> torch.Tensor:
    """Logits whose softmax at temperature 1 is each given probability row."""
    return torch.log(torch.tensor(rows, dtype=torch.float32))


def assert_close_freq(counts: Counter, probs: list[float], n: int) -> None:
    for tok, p in enumerate(probs):
        se = math.sqrt(max(p * (1 - p), 1e-12) / n)
        assert abs(counts[tok] / n - p) <= 5 * se + 1e-9, (tok, counts[tok] / n, p)


def test_processing_temperature_top_k_top_p() -> None:
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    p = Sampler(T1, 0, CPU).probs(logits)
    torch.testing.assert_close(p, torch.tensor([0.5, 0.3, 0.15, 0.05]))
    p2 = Sampler(SamplingConfig(temperature=0.5), 0, CPU).probs(logits)  # p ** 2, renormalised
    sq = torch.tensor([0.25, 0.09, 0.0225, 0.0025])
    torch.testing.assert_close(p2, sq / sq.sum())
    torch.testing.assert_close(Sampler(SamplingConfig(1.0, top_k=2), 0, CPU).probs(logits),
                               torch.tensor([0.625, 0.375, 0.0, 0.0]))
    # top_p 0.8: 0.5 + 0.3 reaches it, so 0.15 and 0.05 go; top_p 0.81 keeps 0.15 as well
    torch.testing.assert_close(Sampler(SamplingConfig(1.0, top_p=0.8), 0, CPU).probs(logits),
                               torch.tensor([0.625, 0.375, 0.0, 0.0]))
    torch.testing.assert_close(Sampler(SamplingConfig(1.0, top_p=0.81), 0, CPU).probs(logits),
                               torch.tensor([0.5, 0.3, 0.15, 0.0]) / 0.95)
    torch.testing.assert_close(Sampler(SamplingConfig(1.0, top_p=0.01), 0, CPU).probs(logits),
                               torch.tensor([1.0, 0.0, 0.0, 0.0]))


def test_residual_math() -> None:
    p = torch.tensor([0.5, 0.3, 0.2])
    torch.testing.assert_close(residual(p, None, 0), torch.tensor([0.0, 0.6, 0.4]))
    torch.testing.assert_close(residual(p, torch.tensor([0.2, 0.6, 0.2]), 1), torch.tensor([1.0, 0.0, 0.0]))
    torch.testing.assert_close(residual(p, torch.tensor([0.4, 0.2, 0.4]), 2), torch.tensor([0.5, 0.5, 0.0]))
    torch.testing.assert_close(residual(p, p.clone(), 0), p)  # nothing left: a rejection of probability 0


def _emitted(tree: DraftTree, logits: torch.Tensor, draft_probs: torch.Tensor | None, n: int = TRIALS) -> Counter:
    """Counts of the (first, second) emitted tokens over ``n`` verifications of ``tree`` after root 0."""
    compiled = compile_tree(0, tree, CPU)
    sampler = Sampler(T1, 1234, CPU)
    hidden = torch.zeros(compiled.tree_rows, 1)
    out: Counter = Counter()
    for _ in range(n):
        ver = accept_sampled(compiled, logits, hidden, sampler, draft_probs)
        emitted = ver.accepted + [ver.bonus]
        out[tuple(emitted[:2])] += 1
    return out


def _emitted_sampled_chain(q0: list[float], logits_per_token: dict[int, torch.Tensor], n: int = TRIALS) -> Counter:
    """Like ``_emitted`` for a one-token chain whose token is drawn from ``q0`` each time (its own stream);
    ``logits_per_token[t]``: the [2, V] logits of root + draft ``t``."""
    sampler = Sampler(T1, 1234, CPU)
    draw = torch.Generator().manual_seed(99)
    q = torch.tensor([q0])
    out: Counter = Counter()
    for _ in range(n):
        tok = int(torch.multinomial(q[0], 1, generator=draw))
        compiled = compile_tree(0, DraftTree.chain([tok]), CPU)
        ver = accept_sampled(compiled, logits_per_token[tok], torch.zeros(2, 1), sampler, q)
        emitted = ver.accepted + [ver.bonus]
        out[tuple(emitted[:2])] += 1
    return out


def test_chain_with_draft_probabilities_keeps_target_distribution() -> None:
    # row 0 = root: p0; row 1 = draft token 1: p1. Draft q0 puts 0.6 on token 1 (more than p0's 0.3).
    # the draft token is drawn from q0 (over-weights token 1: 0.6 > p0's 0.3); after token t the target's
    # next-token distribution is nxt[t]
    p0, q0 = [0.5, 0.3, 0.2], [0.2, 0.6, 0.2]
    nxt = {0: [0.1, 0.1, 0.8], 1: [0.6, 0.2, 0.2], 2: [0.3, 0.4, 0.3]}
    counts = _emitted_sampled_chain(q0, {t: logits_of(p0, row) for t, row in nxt.items()})
    first = Counter()
    for seq, c in counts.items():
        first[seq[0]] += c
    assert_close_freq(first, p0, TRIALS)
    # accepted: P(draft t) * min(1, p0 / q0) = min(q0, p0) summed = 0.2 + 0.3 + 0.2 = 0.7
    n_acc = sum(c for seq, c in counts.items() if len(seq) == 2)
    assert abs(n_acc / TRIALS - 0.7) <= 5 * math.sqrt(0.21 / TRIALS)
    for t, row in nxt.items():  # a bonus after an accepted draft t follows the target after t
        after = Counter({seq[1]: c for seq, c in counts.items() if len(seq) == 2 and seq[0] == t})
        assert_close_freq(after, row, sum(after.values()))


def test_tree_of_deterministic_siblings_keeps_target_distribution() -> None:
    # the root's children 0 and 2 (one-hot drafts), each with a child; rows: 0 root, 1 tok 0, 2 tok 2 under 1, 3 tok 2
    p0 = [0.4, 0.35, 0.25]
    tree = DraftTree((0, 2, 2), (-1, 0, -1))
    counts = _emitted(tree, logits_of(p0, [0.3, 0.3, 0.4], [0.2, 0.2, 0.6], [0.7, 0.2, 0.1]), None)
    first = Counter()
    for seq, c in counts.items():
        first[seq[0]] += c
    assert_close_freq(first, p0, TRIALS)
    # after the first token 2 (accepted as a sibling or drawn as bonus), the second follows row 3's p
    after2 = Counter({seq[1]: c for seq, c in counts.items() if seq[0] == 2 and len(seq) == 2})
    assert_close_freq(after2, [0.7, 0.2, 0.1], sum(after2.values()))


def test_no_residual_is_biased() -> None:
    """The constructed check itself catches the classic bug (resampling from p after a rejection)."""
    import specbench.engine.sampling as S

    p0 = [0.5, 0.3, 0.2]
    original = S.residual
    S.residual = lambda p, q, token: p
    try:
        counts = _emitted(DraftTree.chain([0]), logits_of(p0, [0.3, 0.3, 0.4]), None, n=4000)
    finally:
        S.residual = original
    first = sum(c for seq, c in counts.items() if seq[0] == 0) / 4000
    assert abs(first - 0.75) < 0.05  # 0.5 + 0.5 * 0.5, not 0.5


def test_greedy_config_is_the_greedy_path_and_sampling_is_reproducible() -> None:
    model = make_tiny_model("llama", seed=3)
    engine = Engine(model, stop_ids=set())
    prompt = [5, 9, 2, 7, 7, 1]
    ref = greedy_reference(model, prompt, 12)
    assert engine.generate(prompt, RandomDrafter(0, 64), 12, sampling=SamplingConfig()).output_ids == ref
    cfg = SamplingConfig(temperature=1.0, seed=0)
    a = engine.generate(prompt, OracleDrafter(ref, len(prompt)), 12, sampling=cfg, seed=5)
    b = engine.generate(prompt, OracleDrafter(ref, len(prompt)), 12, sampling=cfg, seed=5)
    c = engine.generate(prompt, None, 12, sampling=cfg, seed=6)
    assert a.output_ids == b.output_ids and len(a.output_ids) == 12
    assert len(a.token_logprobs) == 12 and all(lp <= 0 for lp in a.token_logprobs)
    assert c.output_ids != a.output_ids or c.token_logprobs != a.token_logprobs


def test_generation_seed_and_labels() -> None:
    assert generation_seed(0, "gsm8k", "1", 1, 0) != generation_seed(1, "gsm8k", "1", 1, 0)
    assert generation_seed(0, "gsm8k", "1", 1, 0) != generation_seed(0, "gsm8k", "1", 2, 0)
    assert sampling_label({}) == "T=0"  # runs from before sampling existed were greedy
    assert sampling_label({"config": {"temperature": 0.7, "top_k": 50}}) == "T=0.7 top_k=50"
    assert manifest_sampling({"sampling": {"temperature": 1, "top_p": 0.9, "top_k": 0, "seed": 3}}).seed == 3


@pytest.mark.parametrize("values, needle", [
    ({"temperature": -1.0}, "--temperature must be >= 0"),
    ({"temperature": 1.0, "top_p": 0.0}, "--top-p must be in (0, 1]"),
    ({"top_p": 1.5}, "--top-p must be in (0, 1]"),
    ({"top_k": -1}, "--top-k must be >= 0"),
])
def test_bad_sampling_values(values: dict, needle: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(").replace("]", r"\]")):
        RunConfig(**values).validate()
    flags = [x for k, v in values.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    assert main(["run", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_sps_reduced_vocabulary_draft_probs_land_on_target_ids() -> None:
    """A distilled draft's distribution over its own ids is the same distribution over the target's ids."""
    import numpy as np

    from specbench_methods.sps.draft_runner import DraftRunner

    runner = DraftRunner(make_tiny_model("llama", seed=0, vocab=3), vocab=np.array([-1, 5, 2]), target_vocab=8)
    full = runner._on_target_vocab(torch.tensor([0.0, 0.7, 0.3]))
    torch.testing.assert_close(full, torch.tensor([0, 0, 0.3, 0, 0, 0.7, 0, 0]))
    tokens, q = runner.draft_sampled([5, 2, 5], 3, Sampler(T1, 0, CPU))
    assert len(tokens) == 3 and q.shape == (3, 8) and all(q[i, t] > 0 for i, t in enumerate(tokens))
    torch.testing.assert_close(q.sum(-1), torch.ones(3))
    assert set(tokens) <= {2, 5}
