"""DDTree's tree over DFlash's block: the best-first construction on hand-made per-position distributions (nodes,
parents, order by hand), against every path scored by brute force, the drafter's tree from DFlash's own rows, and
losslessness on the four tiny families (alone on both torch backends, batched two wide under ``budget=auto``)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from specbench.budget.auto_budget import AutoBudget
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench_methods.dflash.best_first import best_first_tree
from specbench_methods.dflash.ddtree import DDTreeConfig, DDTreeDrafter
from specbench_methods.dflash.method import DFlashDrafter
from test_dflash import _draft
from test_engine_exact import FAMILIES, greedy_reference


def _logprobs(rows: list[dict[int, float]], vocab: int = 8) -> torch.Tensor:
    """``[len(rows), vocab]`` log-probabilities, row ``d`` giving the tokens of ``rows[d]`` their probability."""
    out = torch.full((len(rows), vocab), -math.inf)
    for d, row in enumerate(rows):
        for token, p in row.items():
            out[d, token] = math.log(p)
    return out


# tokens a=5 b=1 c=7 | d=2 e=6 f=0 | g=3 h=4 at depths 1 | 2 | 3
HAND = _logprobs([{5: 0.5, 1: 0.4, 7: 0.1}, {2: 0.6, 6: 0.3, 0: 0.1}, {3: 0.9, 4: 0.1}])


def test_tree_by_hand() -> None:
    """Pops, by score: a .5, b .4, ad .30, adg .27, bd .24, bdg .216, ae .15: seven nodes in
    that order, parents the nodes they extend; a's children d then e, best first; not breadth-first (adg before
    bd)."""
    tree = best_first_tree(HAND, 7)
    assert tree.tokens == (5, 1, 2, 3, 2, 3, 6)
    assert tree.parents == (-1, -1, 0, 2, 1, 4, 0)
    assert tree.sibling_ranks() == [0, 1, 0, 0, 0, 0, 1]
    more = best_first_tree(HAND, 11)  # then aeg .135 under ae, be .12 under b, beg .108 under be, c .1 under the root
    assert more.tokens[:7] == tree.tokens and more.tokens[7:] == (3, 6, 3, 7) and more.parents[7:] == (6, 1, 8, -1)
    assert best_first_tree(HAND, 1).tokens == (5,) and best_first_tree(HAND[:1], 3).tokens == (5, 1, 7)
    assert len(best_first_tree(HAND, 0)) == 0 and len(best_first_tree(HAND[:0], 4)) == 0


def _path_scores(logprobs: torch.Tensor) -> dict[tuple[int, ...], float]:
    """Every prefix of every depth, scored by brute force."""
    depth, vocab = logprobs.shape
    return {p: sum(float(logprobs[d, t]) for d, t in enumerate(p))
            for n in range(1, depth + 1) for p in itertools.product(range(vocab), repeat=n)}


def test_tree_is_the_best_prefixes_with_children_best_first() -> None:
    rng = torch.Generator().manual_seed(0)
    for trial in range(20):
        logprobs = torch.log_softmax(3 * torch.randn(3, 5, generator=rng), -1)
        scores = _path_scores(logprobs)
        nodes = 1 + trial * 3
        tree = best_first_tree(logprobs, nodes)
        paths = [tuple(tree.path_to(i)) for i in range(len(tree))]
        assert len(tree) == nodes and len(set(paths)) == nodes
        assert sorted(scores[p] for p in paths) == sorted(scores.values())[-nodes:]  # the best prefixes
        assert [scores[p] for p in paths] == sorted((scores[p] for p in paths), reverse=True)  # pop order
        children: dict[int, list[float]] = {}
        for i, parent in enumerate(tree.parents):
            children.setdefault(parent, []).append(scores[paths[i]])
        assert all(s == sorted(s, reverse=True) for s in children.values())  # best first (and distinct: a set)


def _ctx(tokens: list[int], k: int, depth: int) -> DraftContext:
    return DraftContext(tokens, 3, torch.zeros(32), depth, torch.zeros(k, 32), layer_states=torch.randn(k, 2, 32))


def test_drafter_builds_the_tree_of_dflashs_rows() -> None:
    """The same draft and context as DFlash: the tree is ``best_first_tree`` of the rows DFlash takes the argmax
    of, so its first-child path is DFlash's chain; ``nodes`` and ``max_depth`` are honoured."""
    target, draft = _draft(block=6)
    torch.manual_seed(3)
    ctx = _ctx([1, 2, 3, 4], 3, 10)
    chain, tree = DFlashDrafter(draft).propose(ctx), DDTreeDrafter(draft, nodes=12).propose(ctx)
    with torch.no_grad():
        rows = DFlashDrafter(draft).block_logits(ctx)
    assert rows is not None and tree == best_first_tree(torch.log_softmax(rows, -1), 12) and len(tree) == 12
    node, first_path = -1, []
    while node in tree.parents:
        node = tree.parents.index(node)
        first_path.append(tree.tokens[node])
    assert chain is not None and first_path == list(chain.tokens)[: len(first_path)]
    assert len(DDTreeDrafter(draft).propose(ctx)) == 5  # nodes=0: block_size - 1
    assert DDTreeDrafter(draft, nodes=40).propose(_ctx([1, 2, 3, 4], 3, 2)).depth <= 2
    assert DDTreeDrafter(draft).propose(_ctx([1, 2, 3, 4], 3, 0)) is None
    with pytest.raises(ConfigError, match="nodes"):
        DDTreeConfig(nodes=-1).validate()


@pytest.mark.parametrize("family", FAMILIES)
def test_lossless_alone_and_batched_under_auto_budget(family: str) -> None:
    """Greedy output equals AR's alone on both torch backends and two wide with refill under ``budget=auto`` (a flat
    made-up cost, so most of each tree is verified); the drafts were trees."""
    target, draft = _draft(family, seed=4)
    prompts = [[5, 9, 2, 7, 7, 1], [3, 3, 8], [11, 4, 6, 1, 2, 9, 9, 30, 2]]
    refs = [greedy_reference(target, p, 24) for p in prompts]
    for backend in ("reference", "fast"):
        engine = Engine(target, stop_ids=set(), backend=backend)
        gens = [engine.generate(p, DDTreeDrafter(draft, nodes=10), 24) for p in prompts]
        assert [g.output_ids for g in gens] == refs, backend
    assert max(max(g.draft_sizes) for g in gens) == 10
    flat = AutoBudget(lambda n, context=None: 1.0 + 0.01 * (np.asarray(n) - 1), calibrate=False)
    batched = BatchDecoder(engine, 24, budget=flat).generate([Request(p) for p in prompts],
                                                              [DDTreeDrafter(draft, nodes=10) for _ in range(2)], 2,
                                                              refill=True)
    assert [g.output_ids for g in batched] == refs
    assert sum(sum(g.draft_sizes) for g in batched) > 0
