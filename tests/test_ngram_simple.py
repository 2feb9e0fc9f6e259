"""``ngram-simple`` (llama.cpp's ``--spec-type ngram-simple``): its drafting rules on constructed token sequences,
each expected draft computed by hand as llama.cpp's ``common_ngram_simple_draft`` would (and checked once against
that function compiled from the reference commit), and its output equal to AR's on the tiny families, alone, at
batch size 2 and under ``budget=auto``."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.ngram.history import TokenHistory
from specbench_methods.ngram.simple import NgramSimpleConfig, NgramSimpleDrafter, simple_draft
from specbench.config.coerce import from_dict
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.budget.auto_budget import AutoBudget
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.errors import ConfigError
from specbench.plugins.registry import METHODS
from test_engine_exact import FAMILIES, greedy_reference


def draft(tokens: list[int], n: int = 2, m: int = 3) -> list[int]:
    return simple_draft(np.array(tokens, dtype=np.int64), n, m)


def test_a_match_drafts_what_followed_it() -> None:
    # history [9, 1, 2, 3, 4, 5, 6, 1] + root 2: [1, 2] at position 1, followed by [3, 4, 5] (size_m caps at 3)
    assert draft([9, 1, 2, 3, 4, 5, 6, 1, 2]) == [3, 4, 5]
    assert draft([9, 1, 2, 3, 4, 5, 6, 1, 2], m=5) == []  # history 8 <= 2 + 5 + 1: too short to draft at all
    assert draft([9, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2], m=4) == [3, 4, 5, 6]


def test_no_match_and_too_short_a_history_draft_nothing() -> None:
    assert draft([9, 8, 7, 6, 5, 4, 3, 1, 2]) == []  # [1, 2] never occurred before
    # history [9, 1, 2, 3, 4, 1] (6 tokens) is not more than 2 + 3 + 1, though [1, 2] matches at 1
    assert draft([9, 1, 2, 3, 4, 1, 2]) == []
    assert draft([9, 1, 2, 3, 4, 5, 1, 2]) == [3, 4, 5]  # one token more: drafted


def test_the_match_at_position_zero_is_never_found() -> None:
    assert draft([1, 2, 3, 4, 5, 6, 7, 1, 2]) == []  # llama.cpp's loop stops before position 0
    assert draft([1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 9, 9, 1, 2]) == [9, 9, 1]  # ... but finds position 8


def test_the_most_recent_match_wins_and_a_short_continuation_is_dropped() -> None:
    # [1, 2] at 2 (followed by 5 5 5) and at 7 (followed by 1, then the root): the latest, 7, wins, and its
    # continuation before the root is 1 token < size_n = 2: nothing, the older match is not tried
    assert draft([9, 7, 1, 2, 5, 5, 5, 1, 2, 1, 2]) == []
    # the same with the latest match followed by two tokens before the root: drafted
    assert draft([9, 7, 1, 2, 5, 5, 5, 1, 2, 8, 1, 2]) == [8, 1]
    assert draft([9, 7, 1, 2, 5, 5, 5, 1, 2, 8, 4, 6, 1, 2]) == [8, 4, 6]  # latest at 7, not [5, 5, 5] at 2


def test_the_continuation_stops_before_the_root() -> None:
    # [1, 2] at 5 is followed by 3, 1 and then the root 2, which is not drafted (PLD's lookup would add it)
    assert draft([9, 8, 7, 6, 5, 1, 2, 3, 1, 2]) == [3, 1]
    assert draft([5, 6, 7, 8, 9, 3, 3, 3, 3], m=2) == []  # only the start 5 qualifies: 1 token, too short


def test_sizes_are_llama_cpp_s_and_the_draft_is_cut_to_max_depth() -> None:
    # the last 12 tokens, 20..31, occurred at position 1, followed by 32, 33 and 40s: 48 drafted at the defaults
    text = [1] + list(range(20, 34)) + [40] * 50 + list(range(20, 32))
    drafter = NgramSimpleDrafter(NgramSimpleConfig())
    drafter.begin(text[:5])
    tree = drafter.propose(DraftContext(text, 5, torch.zeros(0), max_depth=60))
    assert tree is not None and list(tree.tokens) == [32, 33] + [40] * 46
    assert list(drafter.propose(DraftContext(text, 5, torch.zeros(0), max_depth=3)).tokens) == [32, 33, 40]
    assert drafter.propose(DraftContext(text, 5, torch.zeros(0), max_depth=0)) is None


def test_config_is_llama_cpp_s() -> None:
    assert (NgramSimpleConfig().size_n, NgramSimpleConfig().size_m) == (12, 48)
    assert from_dict(NgramSimpleConfig, {"size_n": "3", "size_m": "10"}) == NgramSimpleConfig(3, 10)
    for bad in ({"size_n": 0}, {"size_m": 1025}):
        with pytest.raises(ConfigError, match="between 1 and 1024"):
            from_dict(NgramSimpleConfig, bad)
    assert METHODS.get("ngram-simple").config_cls is NgramSimpleConfig


def test_history_follows_a_new_sequence_after_begin() -> None:
    drafter = NgramSimpleDrafter(NgramSimpleConfig(size_n=2, size_m=3))
    first = [9, 1, 2, 3, 4, 5, 6, 1, 2]
    assert list(drafter.propose(DraftContext(first, 3, torch.zeros(0), 8)).tokens) == [3, 4, 5]
    second = [8, 1, 2, 7, 7, 7, 6, 1, 2, 0]  # as long or longer: without begin the stale prefix would be read
    drafter.begin(second[:3])
    assert drafter.propose(DraftContext(second[:-1], 3, torch.zeros(0), 8)).tokens == (7, 7, 7)
    assert TokenHistory().update([1, 2]).dtype == np.int64


def _prompts(model: torch.nn.Module) -> list[list[int]]:
    """Prompts with repeats, one of them the model's own greedy answer between two copies of its prompt, which
    its answer is likely to copy (so drafts are proposed on every family)."""
    base = [5, 9, 2, 7, 7, 1, 3, 4]
    return [base * 3, [11, 4, 6] * 5 + [1, 2], base + greedy_reference(model, base, 24) + base]


@pytest.mark.parametrize("family", FAMILIES)
def test_lossless_alone_batched_and_under_budget_auto(family: str) -> None:
    model = make_tiny_model(family, seed=3)
    engine = Engine(model, stop_ids=set())
    cfg = NgramSimpleConfig(size_n=2, size_m=6)
    prompts = _prompts(model)
    refs = [greedy_reference(model, p, 24) for p in prompts]
    alone = [engine.generate(p, NgramSimpleDrafter(cfg), 24) for p in prompts]
    assert [g.output_ids for g in alone] == refs
    assert sum(sum(g.draft_sizes) for g in alone) > 0  # the drafts reached verification
    slots = [NgramSimpleDrafter(cfg) for _ in range(2)]
    batched = BatchDecoder(engine, 24).generate([Request(p) for p in prompts], slots, 2, refill=True)
    assert [g.output_ids for g in batched] == refs
    assert [g.accept_lengths for g in batched] == [g.accept_lengths for g in alone]  # the same drafts
    flat = AutoBudget(lambda n, context=None: 1.0 + 0.01 * (np.asarray(n) - 1), calibrate=False)
    auto = [engine.generate(p, NgramSimpleDrafter(cfg), 24, budget=flat) for p in prompts]
    assert [g.output_ids for g in auto] == refs and sum(sum(g.draft_sizes) for g in auto) > 0
