"""Auxiliary rows (``engine/aux_rows.py``): their predictions equal plain decoding, and they never
change what the draft tree's rows see, so every output stays AR's."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from specbench.engine.drafter import BaseDrafter, Proposal, StepResult
from specbench.engine.aux_rows import AuxRows, append_aux
from specbench.engine.loop import Engine
from specbench.engine.tree import DraftTree, compile_tree
from test_engine_exact import FAMILIES, greedy_reference, random_tree


def plain_next(model: torch.nn.Module, tokens: list[int]) -> int:
    with torch.inference_mode():
        return int(model(torch.tensor([tokens])).logits[0, -1].argmax())


class AuxProbe(BaseDrafter):
    """Random trees plus a random auxiliary chain; checks each chain prediction against plain decoding."""

    def __init__(self, model: torch.nn.Module, seed: int, vocab: int, with_tree: bool = True) -> None:
        self.model, self.rng, self.vocab, self.with_tree = model, random.Random(seed), vocab, with_tree
        self.checked = 0
        self._pending: tuple[list[int], list[int]] | None = None

    def propose(self, ctx):
        chain = [self.rng.randrange(self.vocab) for _ in range(self.rng.randint(1, 5))]
        self._pending = (list(ctx.tokens), chain)
        tree = random_tree(self.rng, self.vocab) if self.with_tree else None
        return Proposal(tree, AuxRows.chain(chain))

    def observe(self, result: StepResult) -> None:
        if result.aux_predictions is None:  # the engine skipped drafting (one token left)
            assert self._pending is None
            return
        assert self._pending is not None
        context, chain = self._pending
        self._pending = None
        assert len(result.aux_predictions) == len(chain)
        for i, pred in enumerate(result.aux_predictions):
            assert pred == plain_next(self.model, context + chain[: i + 1])
            self.checked += 1


@pytest.mark.parametrize("family", FAMILIES)
def test_aux_predictions_match_plain_decoding_and_output_stays_ar(family: str) -> None:
    model = make_tiny_model(family, seed=3)
    prompt = [5, 9, 2, 7, 7, 1]
    expected = greedy_reference(model, prompt, 14)
    for with_tree in (True, False):
        probe = AuxProbe(model, seed=4, vocab=64, with_tree=with_tree)
        out = Engine(model, stop_ids=set()).generate(prompt, probe, 14).output_ids
        assert out == expected
        assert probe.checked > 10


def test_aux_rows_never_accepted_even_when_they_equal_the_continuation() -> None:
    """An auxiliary chain holding the true continuation must not be emitted as accepted draft tokens."""
    model = make_tiny_model("llama", seed=5)
    prompt = [3, 1, 4, 1, 5]
    expected = greedy_reference(model, prompt, 10)

    class Cheat(BaseDrafter):
        def propose(self, ctx):
            done = len(ctx.tokens) - len(prompt)
            return Proposal(None, AuxRows.chain(expected[done : done + 4] or [0]))

    gen = Engine(model, stop_ids=set()).generate(prompt, Cheat(), 10)
    assert gen.output_ids == expected
    assert set(gen.accept_lengths) == {1}  # nothing accepted from auxiliary rows
    assert max(gen.aux_sizes) > 0 and max(gen.draft_sizes) == 0


def test_layout_masks_tree_and_aux_from_each_other() -> None:
    tree = DraftTree((4, 5, 6), (-1, 0, -1))
    aux = AuxRows((7, 8), (1, 2), np.array([[True, False], [True, True]]))
    c = append_aux(compile_tree(9, tree, torch.device("cpu")), aux)
    assert c.input_ids.tolist() == [[9, 4, 5, 6, 7, 8]]
    assert c.position_offsets.tolist() == [0, 1, 2, 1, 1, 2]
    assert c.aux_start == 4 and c.tree_rows == 4
    m = c.ancestor_mask.int().tolist()
    assert m[4] == [1, 0, 0, 0, 1, 0] and m[5] == [1, 0, 0, 0, 1, 1]  # root + own chain only
    assert all(row[4:] == [0, 0] for row in m[:4])  # tree rows never see auxiliary rows
    chain_only = append_aux(compile_tree(9, DraftTree.chain([4, 5]), torch.device("cpu")), AuxRows.chain([7]))
    assert chain_only.position_offsets.tolist() == [0, 1, 2, 1]
    assert chain_only.ancestor_mask.int().tolist()[3] == [1, 0, 0, 1]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tokens": (1,), "offsets": (1, 2), "attends": np.ones((1, 1), bool)}, "same length"),
        ({"tokens": (1,), "offsets": (0,), "attends": np.ones((1, 1), bool)}, "offsets must be >= 1"),
        ({"tokens": (1, 2), "offsets": (1, 2), "attends": np.ones((1, 1), bool)}, "shape"),
        ({"tokens": (1, 2), "offsets": (1, 2), "attends": np.zeros((2, 2), bool)}, "itself"),
    ],
)
def test_bad_aux_rows_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AuxRows(**kwargs)
