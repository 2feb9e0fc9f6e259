"""The exact distribution of a tiny target's first sampled tokens, and a goodness-of-fit test of samples against it.

``exact_distribution`` enumerates every sequence of ``length`` tokens the sampling settings allow (with top-k 3:
3 ** length of them) and its probability under AR sampling, from the target's processed probabilities
(``Sampler.probs``). ``chi_square_pvalue`` compares observed counts with it: cells expected fewer than 5 times
are merged into one, and the p-value is the Wilson-Hilferty approximation of the chi-square tail.

>>> from collections import Counter
>>> exact = {(1,): 0.5, (2,): 0.5}
>>> round(chi_square_pvalue(Counter({(1,): 50, (2,): 50}), exact), 3), chi_square_pvalue(Counter({(3,): 1}), exact)
(0.951, 0.0)
>>> chi_square_pvalue(Counter({(1,): 90, (2,): 10}), exact) < 1e-9
True
>>> total_variation(Counter({(1,): 75, (2,): 25}), exact)
0.25

``fit`` also tests each position's marginal (a joint over many rare sequences merges into too few cells to say
anything) and returns the smallest p-value, Bonferroni-corrected, with where it was found:

>>> pairs = {(a, b): 0.25 for a in (1, 2) for b in (1, 2)}
>>> fit(Counter({(1, 1): 30, (2, 1): 30, (1, 2): 20, (2, 2): 20}), pairs)
(0.12884, 'the token at position 1')
"""
from __future__ import annotations

import math
from collections import Counter

import torch

from specbench.engine.sampling import Sampler
from specbench.engine.sampling_config import SamplingConfig

Sequence = tuple[int, ...]


@torch.inference_mode()
def exact_distribution(model: torch.nn.Module, prompt: list[int], sampling: SamplingConfig,
                       length: int) -> dict[Sequence, float]:
    """P(the first ``length`` sampled tokens) of AR sampling after ``prompt``, by enumeration."""
    sampler = Sampler(sampling, 0, torch.device("cpu"))
    dist: dict[Sequence, float] = {}

    def walk(prefix: list[int], prob: float) -> None:
        if len(prefix) == length:
            dist[tuple(prefix)] = prob
            return
        p = sampler.probs(model(torch.tensor([prompt + prefix])).logits[0, -1]).double()
        for tok in torch.nonzero(p).flatten().tolist():
            walk(prefix + [tok], prob * float(p[tok]))

    walk([], 1.0)
    return dist


def chi_square_pvalue(counts: Counter, exact: dict[Sequence, float]) -> float:
    """Goodness of fit of ``counts`` to ``exact``; 0 when a sequence of probability 0 was drawn."""
    n = sum(counts.values())
    if any(seq not in exact for seq in counts):
        return 0.0
    big = [s for s in exact if exact[s] * n >= 5]
    small = [s for s in exact if exact[s] * n < 5]
    observed = [counts[s] for s in big] + ([sum(counts[s] for s in small)] if small else [])
    expected = [exact[s] * n for s in big] + ([sum(exact[s] for s in small) * n] if small else [])
    x2 = sum((o - e) ** 2 / e for o, e in zip(observed, expected))
    k = len(observed) - 1
    if k < 1:
        return 1.0
    z = ((x2 / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def total_variation(counts: Counter, exact: dict[Sequence, float]) -> float:
    """Half the L1 distance between the empirical distribution of ``counts`` and ``exact`` (reported beside p)."""
    n = sum(counts.values())
    cells = set(counts) | set(exact)
    return round(0.5 * sum(abs(counts[s] / n - exact.get(s, 0.0)) for s in cells), 6)


def marginal(dist: dict[Sequence, float] | Counter, position: int) -> dict[Sequence, float] | Counter:
    """The distribution (or counts) of the token at ``position`` alone, keyed ``(token,)``."""
    out: Counter = Counter()
    for seq, weight in dist.items():
        out[(seq[position],)] += weight
    return out if isinstance(dist, Counter) else dict(out)


def fit(counts: Counter, exact: dict[Sequence, float]) -> tuple[float, str]:
    """(the smallest p-value of the joint test and of each position's marginal test, times their number, capped
    at 1; which test gave it)."""
    length = len(next(iter(exact)))
    tests = [("the sequences", counts, exact)] + [(f"the token at position {i}", marginal(counts, i), marginal(exact, i))
                                                 for i in range(length)]
    p, where = min((chi_square_pvalue(c, e), name) for name, c, e in tests)
    return round(min(1.0, p * len(tests)), 6), where
