"""``StepResult.row_topk``: the top-k token ids of every verified row, for a drafter that asks (row_topk > 0).

Checked on the four tiny families against a plain forward over prompt + each row's root-to-node path;
a drafter that does not ask gets None, and so does the step it did not propose for.
"""
from __future__ import annotations

import random

import pytest
import torch

from conftest import make_tiny_model
from specbench.engine import step as engine_step
from specbench.engine.drafter import BaseDrafter, StepResult
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree

FAMILIES = ["llama", "qwen2", "gpt2", "neox"]
K = 3


class TopkRecorder(BaseDrafter):
    """Random trees; keeps (context, tree, row_topk) of every step it is told about."""

    def __init__(self, k: int, seed: int = 0) -> None:
        self.row_topk = k
        self.rng = random.Random(seed)
        self.steps: list[tuple[list[int], DraftTree | None, torch.Tensor | None]] = []
        self._context: list[int] = []
        self.proposed = 0

    def propose(self, ctx):
        self._context = list(ctx.tokens)
        self.proposed += 1
        n = self.rng.randint(1, 6)
        return DraftTree(tuple(self.rng.randrange(64) for _ in range(n)), tuple(self.rng.randint(-1, i - 1) for i in range(n)))

    def observe(self, result: StepResult) -> None:
        self.steps.append((self._context, result.tree, result.row_topk))


@pytest.mark.parametrize("family", FAMILIES)
def test_row_topk_equals_plain_forward_topk(family: str) -> None:
    model = make_tiny_model(family, seed=4)
    engine = Engine(model, stop_ids=set())
    prompt = [5, 9, 13, 2, 7]
    drafter = TopkRecorder(K)
    gen = engine.generate(prompt, drafter, 12)
    assert drafter.proposed == len(drafter.steps) - 1  # the last step (one token left) drafts nothing
    checked = 0
    for context, tree, topk in drafter.steps[:-1]:
        assert topk is not None and topk.shape == (1 + len(tree), K)
        for row in range(1 + len(tree)):
            path = context + (tree.path_to(row - 1) if row else [])
            with torch.inference_mode():
                plain = model(torch.tensor([path])).logits[0, -1]
            best = plain.topk(K).values
            # the ids the engine reports carry the K largest logits of the plain forward (order included)
            torch.testing.assert_close(plain[topk[row]], best, atol=1e-4, rtol=1e-4)
            checked += 1
    assert checked > 10
    assert drafter.steps[-1][2] is None  # no proposal, no top-k
    assert gen.output_ids == engine.generate(prompt, None, 12).output_ids


def test_drafter_that_does_not_ask_gets_none_and_nothing_is_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    model = make_tiny_model("llama", seed=4)
    engine = Engine(model, stop_ids=set())
    calls = {"n": 0}
    real = engine_step.row_topk

    def counting(drafter, logits, rows):
        out = real(drafter, logits, rows)
        calls["n"] += out is not None
        return out

    monkeypatch.setattr(engine_step, "row_topk", counting)
    quiet = TopkRecorder(0)
    engine.generate([1, 2, 3], quiet, 8)
    assert quiet.steps and all(t is None for _, _, t in quiet.steps)
    assert calls["n"] == 0
    asking = TopkRecorder(2)
    engine.generate([1, 2, 3], asking, 8)
    assert calls["n"] == asking.proposed > 0


def test_row_topk_with_a_budget_cut_tree_matches_the_verified_tree() -> None:
    """The rows are those of the tree the engine verified (cut to the tokens left), not the proposal."""
    model = make_tiny_model("gpt2", seed=1)
    engine = Engine(model, stop_ids=set())

    class Long(TopkRecorder):
        def propose(self, ctx):
            super().propose(ctx)
            return DraftTree.chain([3] * 10)

    drafter = Long(2)
    engine.generate([4, 4, 4], drafter, 4)  # room 3 after the prefill: the chain is cut to 2 tokens
    _, tree, topk = drafter.steps[0]
    assert len(tree) <= 2 and topk.shape == (1 + len(tree), 2)
