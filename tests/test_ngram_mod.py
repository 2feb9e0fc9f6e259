"""``ngram-mod`` (llama.cpp's ``--spec-type ngram-mod``): its rules on constructed token sequences, each draft
computed by hand as the server's ``common_speculative_impl_ngram_mod`` would (``begin``, ``draft_one``,
``accept``), and its output equal to AR's on the tiny families, alone, at batch size 2 and under ``budget=auto``.
A small pool (1024 entries) keeps the tests light; its hash is the server's, reduced to 10 bits."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from specbench_methods.ngram.mod import NgramModConfig, NgramModDrafter
from specbench_methods.ngram.mod_pool import ModPool
from ngram_lossless import check_lossless
from specbench.config.coerce import from_dict
from specbench.engine.drafter import DraftContext, StepResult
from specbench.engine.tree import DraftTree
from specbench.errors import ConfigError
from specbench.plugins.registry import METHODS
from test_engine_exact import FAMILIES

PROMPT = [1, 2, 3, 4, 1]  # [1, 2] -> 3, [2, 3] -> 4, [3, 4] -> 1 enter the pool ([4, 1] has no next token yet)


def drafter(n_max: int = 4, n_min: int = 1, prompt: list[int] = PROMPT) -> NgramModDrafter:
    d = NgramModDrafter(NgramModConfig(n_match=2, n_max=n_max, n_min=n_min), pool_size=1 << 10)
    d.begin(prompt)
    return d


def test_a_match_chains_the_pool_and_no_match_drafts_nothing() -> None:
    d = drafter()
    assert d.draft(np.array(PROMPT + [2])) == [3, 4, 1]  # [1, 2] -> 3, [2, 3] -> 4, [3, 4] -> 1, [4, 1] empty
    assert d.n_draft_last == 3
    assert d.draft(np.array(PROMPT + [9])) == [] and d.n_draft_last == 0  # [1, 9]: empty at once
    assert drafter(n_max=2).draft(np.array(PROMPT + [2])) == [3, 4]  # n_max caps the chain


def test_a_short_continuation_is_dropped_below_n_min() -> None:
    assert drafter(n_min=3).draft(np.array(PROMPT + [2])) == [3, 4, 1]  # 3 found: enough
    assert drafter(n_min=4).draft(np.array(PROMPT + [2])) == []  # empty at the 4th: fewer than n_min


def test_the_last_writer_wins_and_no_key_is_checked() -> None:
    # [1, 2] is followed by 3, later by 5: the pool keeps 5; then [2, 5] -> 0 ([5, 0] has no next token)
    assert drafter(prompt=[1, 2, 3, 1, 2, 5, 0]).draft(np.array([1, 2, 3, 1, 2, 5, 0, 1, 2])) == [5, 0]
    pool = ModPool(2, size=1 << 10)
    pool.add_range(np.array([7, 8, 9]), 0, 1)
    h = pool.hash_of([7, 8])
    clash = next([a, b] for a in range(50) for b in range(50) if pool.hash_of([a, b]) == h and [a, b] != [7, 8])
    assert pool.get(pool.hash_of(clash)) == 9  # another n-gram in the same entry reads its token


def test_new_ngrams_enter_in_chunks_of_more_than_32_tokens() -> None:
    d = drafter()
    text = PROMPT + [50 + i for i in range(30)] + [7, 8, 9]  # 7 8 9 at positions 35..37
    assert d.draft(np.array(text[:35] + [7])) == []  # history 35: 3 + 32 < 35 is false, nothing added yet
    assert d.i_last == 3
    # history text + [7] (39 tokens): starts 3..36 enter, [7, 8] -> 9 and [8, 9] -> 7 among them; [9, 7] not yet
    assert d.draft(np.array(text + [7, 8])) == [9, 7]
    assert d.i_last == 39 - 2


def test_the_acceptance_is_measured_before_the_cut_and_five_low_rounds_reset_the_pool() -> None:
    d = drafter()
    tree = d.propose(DraftContext(PROMPT + [2], 5, None, max_depth=1))
    assert tree.tokens == (3,) and d.n_draft_last == 3  # cut to max_depth; the fraction's denominator is 3
    d.observe(StepResult(DraftTree.chain([3]), [0], 4))  # 1 of 3 >= 0.25: not low
    assert d.n_low == 0
    for round_ in range(1, 5):
        assert d.draft(np.array(PROMPT + [2])) == [3, 4, 1]
        d.accept(0)
        assert d.n_low == round_ and d.pool.used == 3
    d.draft(np.array(PROMPT + [2]))
    d.accept(1)  # 1 of 3: a good round ends the streak
    assert d.n_low == 0
    for _ in range(5):
        d.draft(np.array(PROMPT + [2]))
        d.accept(0)
    assert d.pool.used == 0 and d.n_low == 0 and d.i_last == 0  # reset: the fifth low round in a row
    assert d.draft(np.array(PROMPT + [2])) == []  # nothing in the pool (history 5 < 0 + 32: nothing re-added)
    d.accept(0)  # after no draft, accept changes nothing
    assert d.n_low == 0


def test_the_pool_outlives_requests_until_it_is_a_quarter_full() -> None:
    d = drafter()
    d.begin([8, 8, 6])  # another request: [8, 8] -> 6 added, request 1's n-grams kept
    assert d.draft(np.array([8, 8, 6, 1, 2])) == [3, 4, 1]
    assert copy.deepcopy(d).pool.used == 4 and d.keeps_state_across_generations
    small = NgramModDrafter(NgramModConfig(n_match=1, n_max=4, n_min=1), pool_size=16)
    small.begin([1, 2, 3, 4])  # 3 of 16 used: kept
    assert small.pool.used == 3
    small.begin([5, 6])  # 4 of 16: not over a quarter
    assert small.pool.used == 4
    small.begin([7, 8])  # 5 of 16 > 0.25: reset at the request's start
    assert small.pool.used == 0


def test_config_is_llama_cpp_s() -> None:
    cfg = NgramModConfig()
    assert (cfg.n_match, cfg.n_max, cfg.n_min) == (24, 64, 48)
    with pytest.raises(ConfigError, match="n_match must be between 1 and 1024"):
        from_dict(NgramModConfig, {"n_match": 0})
    with pytest.raises(ConfigError, match="n_min must be between 0 and 1024"):
        from_dict(NgramModConfig, {"n_min": -1})
    assert METHODS.get("ngram-mod").config_cls is NgramModConfig


@pytest.mark.parametrize("family", FAMILIES)
def test_lossless_alone_batched_and_under_budget_auto(family: str) -> None:
    check_lossless(family, lambda: NgramModDrafter(NgramModConfig(n_match=1, n_max=4, n_min=1), pool_size=1 << 16))
