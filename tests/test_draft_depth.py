"""``draft_depth.best_depth`` against a brute force over every (depth, kept nodes) pair on random trees and costs."""
from __future__ import annotations

import numpy as np
import pytest

from specbench.budget.draft_depth import best_depth


def brute_force(probs, depths, chain, seconds, drafting, free):
    top = int(depths.max()) if len(depths) else 0
    nodes = list(zip(probs, depths)) + [(chain[d - 1], d) for d in range(top + 1, len(chain) + 1)]
    best = (-1.0, 1, 0)
    for depth in range(1, len(chain) + 1):
        held = sorted((p for p, d in nodes if d <= depth), reverse=True)
        for k in range(len(held) + 1):
            value = (1 + sum(held[:k])) / (seconds[k] + drafting[depth - 1])
            if value > best[0] + 1e-12:
                best = (value, depth, k)
    _, depth, k = best
    if k == 0:
        return 1
    return depth + 1 if depth < len(drafting) and drafting[depth] - drafting[depth - 1] <= free else depth


@pytest.mark.parametrize("seed", range(40))
def test_best_depth_is_the_best_pair_of_depth_and_kept_nodes(seed):
    rng = np.random.default_rng(seed)
    n, most = int(rng.integers(0, 12)), int(rng.integers(1, 8))
    depths = np.sort(rng.integers(1, most + 1, n))
    probs = np.sort(rng.random(n))[::-1] * 0.6 ** (depths - 1)  # deeper nodes less likely, as along any path
    chain = np.cumprod(rng.random(most))
    seconds = 0.040 + rng.choice([0.0, 0.0005, 0.004]) * np.arange(n + most + 2) + rng.random(n + most + 2) * 1e-3
    drafting = np.cumsum(rng.choice([0.0, 0.0001, 0.003], most + 1))
    assert best_depth(probs, depths, chain, seconds, drafting, 0.0008) == \
        brute_force(probs, depths, chain, seconds, drafting, 0.0008)
