"""Token Recycling: the static tree, the adjacency matrix (update, expansion) and exactness on tiny models."""
from __future__ import annotations

import doctest
import random

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.recycling import adjacency, template
from specbench_methods.recycling.adjacency import Adjacency
from specbench_methods.recycling.method import RecyclingConfig, RecyclingDrafter
from specbench_methods.recycling.template import FANOUT_2_2_2, layout
from specbench.config.coerce import from_dict
from specbench.engine.drafter import DraftContext, StepResult
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree
from specbench.errors import ConfigError

FAMILIES = ["llama", "qwen2", "gpt2", "neox"]


def test_docstring_examples() -> None:
    for mod in (adjacency, template):
        assert doctest.testmod(mod).failed == 0, mod.__name__


def test_template_2_2_2_is_the_references_tree() -> None:
    tree = layout(FANOUT_2_2_2)
    # facts of the reference's tree_template_.py "2.2.2": 80 nodes, per level 8, 21, 25, 15, 8, 3
    assert len(tree) == 80 and tree.depth == 6
    sizes = np.diff((0,) + tree.level_ends).tolist()
    assert sizes == [8, 21, 25, 15, 8, 3]
    assert tree.paths[:10] == ((0,), (1,), (2,), (3,), (4,), (5,), (6,), (7,), (0, 0), (0, 1))
    assert tree.paths[8 + 8 : 8 + 12] == ((1, 0), (1, 1), (1, 2), (1, 3))  # the root's second successor: 4 children
    assert tree.paths[-3:] == ((0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 1), (0, 0, 0, 1, 0, 0))
    assert tree.max_rank == 7 and tree.nodes_within(2) == 29 and tree.nodes_within(9) == 80
    for i, path in enumerate(tree.paths):  # each node's parent is its path minus the last rank, earlier in the list
        p = tree.parents[i]
        assert (p == -1) == (len(path) == 1) and (p < 0 or (p < i and tree.paths[p] == path[:-1]))
        assert tree.ranks[i] == path[-1] and tree.parent_rows[i] == p + 1
    # children of one node come in rank order: the budget's sibling rank is the successor rank
    DraftTree(tuple(range(80)), tree.parents)


def test_small_layout_by_hand() -> None:
    tree = layout({(): 2, (0,): 1})
    assert tree.paths == ((0,), (1,), (0, 0)) and tree.parents == (-1, -1, 0)
    assert tree.ranks.tolist() == [0, 1, 0] and tree.level_ends == (2, 3) and tree.nodes_within(1) == 2


def test_update_and_expand_worked_example() -> None:
    m = Adjacency(vocab=10, k=3)
    m.update(np.array([2, 5, 7]), np.array([[5, 7, 9], [1, 2, 3], [4, 4, 4]]))
    tree = layout({(): 3, (0,): 2, (1,): 1, (0, 0): 1})  # (0,) (1,) (2,) (0,0) (0,1) (1,0) (0,0,0)
    # root 2 -> 5, 7, 9; 5 -> 1, 2; 7 -> 4; 1 (never written) -> 0
    assert m.expand(2, tree, depth=3).tolist() == [5, 7, 9, 1, 2, 4, 0]
    assert m.expand(2, tree, depth=1).tolist() == [5, 7, 9]
    assert m.expand(2, tree, depth=0).tolist() == []
    assert m.known(2, m.expand(2, tree, 3), tree).tolist() == [True, True, True, True, True, True, False]
    assert not m.known(3, m.expand(3, tree, 3), tree).any()  # an unwritten root: nothing is known
    # a token verified at two rows keeps the later row; k columns of a wider top-k
    m.update(np.array([5, 5]), np.array([[8, 8, 8, 0], [6, 6, 6, 0]]))
    assert m.matrix[5].tolist() == [6, 6, 6]
    m.reset()
    assert not m.matrix.any() and not m.seen.any()


def context(tokens: list[int], depth: int = 10) -> DraftContext:
    return DraftContext(tokens=tokens, prompt_len=1, hidden=torch.zeros(4), max_depth=depth)


def test_drafter_recycles_the_verified_rows() -> None:
    d = RecyclingDrafter(RecyclingConfig(), vocab=100)
    tree = d.propose(context([1, 3]))
    assert len(tree) == 80 and set(tree.tokens) == {0}  # the reference starts from an all-zero matrix
    # the engine verified [3] + a cut tree of 2 nodes (both token 0); rows' top-8 come back
    verified = DraftTree((0, 0), (-1, 0))
    topk = torch.tensor([list(range(10, 18)), list(range(20, 28)), list(range(30, 38))])
    d.observe(StepResult(verified, [], 11, row_topk=topk))
    assert d.matrix.matrix[3].tolist() == list(range(10, 18))
    assert d.matrix.matrix[0].tolist() == list(range(30, 38))  # token 0 at two rows: the later one
    tree = d.propose(context([1, 3], depth=2))
    assert tree.tokens[:8] == tuple(range(10, 18)) and len(tree) == 29
    assert d.propose(context([1, 3], depth=0)) is None
    d.observe(StepResult(None, [], 5, row_topk=None))  # a step without top-k changes nothing
    assert d.matrix.matrix[3].tolist() == list(range(10, 18))


def test_skip_unseen_drafts_only_below_written_rows() -> None:
    d = RecyclingDrafter(RecyclingConfig(skip_unseen=True), vocab=100)
    assert d.propose(context([1, 3])) is None
    d.observe(StepResult(None, [], 4, row_topk=torch.tensor([list(range(10, 18))])))
    tree = d.propose(context([1, 3]))
    assert tree.tokens == tuple(range(10, 18)) and tree.parents == (-1,) * 8  # 10..17 have no rows yet


def test_hot_start_keeps_the_matrix_and_cold_start_resets_it() -> None:
    for hot in (True, False):
        d = RecyclingDrafter(RecyclingConfig(hot_start=hot), vocab=50)
        d.propose(context([1, 3]))
        d.observe(StepResult(None, [], 4, row_topk=torch.tensor([list(range(10, 18))])))
        d.begin([1, 2])
        assert bool(d.matrix.matrix[3].any()) == hot


def test_config_validation() -> None:
    assert from_dict(RecyclingConfig, {"topk": "9"}).topk == 9
    with pytest.raises(ConfigError, match="topk >= 8"):
        from_dict(RecyclingConfig, {"topk": "4"})
    with pytest.raises(ConfigError, match="tree_version"):
        from_dict(RecyclingConfig, {"tree_version": "9.9"})


def test_matrix_rows_are_the_models_top_k() -> None:
    """After one drafting step the root's row holds the target's 8 likeliest next tokens (plain forward)."""
    model = make_tiny_model("llama", seed=6)
    engine = Engine(model, stop_ids=set())
    prompt = [4, 8, 15, 16, 23]
    d = RecyclingDrafter(RecyclingConfig(), vocab=64)
    gen = engine.generate(prompt, d, 3)  # the prefill's token, then one drafting step from it
    assert gen.draft_sizes[1] == 8  # the tree cut to depth 1 (one token left after the root)
    root = gen.output_ids[0]
    assert root != 0  # (token 0 was drafted; a root 0 would have had its row overwritten by the node's)
    with torch.inference_mode():
        logits = model(torch.tensor([prompt + [root]])).logits[0, -1]
    torch.testing.assert_close(logits[torch.from_numpy(d.matrix.matrix[root])], logits.topk(8).values)


@pytest.mark.parametrize("family", FAMILIES)
def test_recycling_equals_greedy_with_random_and_learned_matrices(family: str) -> None:
    model = make_tiny_model(family, seed=11)
    engine = Engine(model, stop_ids=set())
    rng = random.Random(family)
    prompts = [[rng.randrange(64) for _ in range(8)] for _ in range(2)]
    for prompt in prompts:
        ref = engine.generate(prompt, None, 40).output_ids
        # random: a matrix of random successors (drafts mostly rejected)
        noisy = RecyclingDrafter(RecyclingConfig(), vocab=64)
        noisy.matrix.matrix[:] = np.random.default_rng(0).integers(0, 64, size=(64, 8))
        noisy.row_topk = 0  # keep it random: no recycling
        assert engine.generate(prompt, noisy, 40).output_ids == ref
        # learned ("oracle-like"): the second generation of the same prompt drafts from the model's own top-k
        d = RecyclingDrafter(RecyclingConfig(), vocab=64)
        first = engine.generate(prompt, d, 40)
        second = engine.generate(prompt, d, 40)
        assert first.output_ids == second.output_ids == ref
        assert second.forward_passes < first.forward_passes <= 40
        assert second.forward_passes <= 40 // 2  # at least two tokens a step on average


def test_skipped_steps_still_teach_the_matrix() -> None:
    """``budget=auto`` skipping every step (an always-skip budget): the drafter proposes nothing, yet each plain
    step's root row is recycled into the matrix (``observes_plain_steps``), so a later probe drafts from what the
    skipped steps saw; output equals AR's."""
    from specbench.engine.loop import Engine
    from test_skip_exact import SkipPattern

    model = make_tiny_model("llama", seed=2)
    engine = Engine(model, stop_ids=set())
    d = RecyclingDrafter(RecyclingConfig(), vocab=int(model.get_output_embeddings().weight.shape[0]))
    proposed = []
    d.propose = lambda ctx: proposed.append(ctx) or None  # type: ignore[method-assign]
    prompt = [5, 9, 2, 7]
    gen = engine.generate(prompt, d, 12, budget=SkipPattern(0, draft_chance=0.0))
    assert gen.output_ids == engine.generate(prompt, None, 12).output_ids and not proposed
    logits = model(torch.tensor([prompt + gen.output_ids])).logits[0]
    want = {}  # each plain step's root (the prefill's token first) -> the top-8 after it; a repeated root: the last
    for i, root in enumerate(gen.output_ids[:-1]):
        want[root] = logits[len(prompt) + i].topk(8).indices.tolist()
    assert len(want) > 3 and {r: d.matrix.matrix[r].tolist() for r in want} == want
