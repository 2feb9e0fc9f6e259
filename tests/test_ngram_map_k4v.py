"""``ngram-map-k4v`` (llama.cpp's ``--spec-type ngram-map-k4v``): its rules on constructed token sequences, each
draft computed by hand as llama.cpp's ``common_ngram_map_draft`` (with values) and ``common_ngram_map_accept``
would, and its output equal to AR's on the tiny families, alone, at batch size 2 and under ``budget=auto``."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from specbench_methods.ngram.map_k4v import NgramMapK4vConfig, NgramMapK4vDrafter
from specbench_methods.ngram.value_map import KeyStats, ValueMap
from specbench.config.coerce import from_dict
from specbench.engine.drafter import DraftContext, StepResult
from specbench.engine.tree import DraftTree
from specbench.errors import ConfigError
from specbench.plugins.registry import METHODS
from ngram_lossless import check_lossless
from test_engine_exact import FAMILIES

A = np.array
TWICE = [0, 5, 6, 7, 5, 6, 7, 0, 5]  # the key [5] at 1 and 4, both followed by 6 7; the root 5


def test_a_match_with_one_value_drafts_and_no_match_nothing() -> None:
    # [5] found at 4 (the latest start with 2 tokens after it before the root); starts 1 and 4 counted: one value
    assert ValueMap(1, 2, 1).draft(A(TWICE)) == [6, 7]
    assert ValueMap(1, 2, 1).draft(A(TWICE[:-1] + [3])) == []  # [3] never occurred
    # an occurrence needs size_m tokens after it before the root: [5] at 4 has only 6 7 ... here 6 then the root
    assert ValueMap(1, 2, 1).draft(A([0, 1, 2, 3, 5, 6, 5])) == []


def test_no_draft_unless_the_most_frequent_value_is_twice_the_others() -> None:
    # 6 7 once, 8 9 once: 1 < 2 * 1, no draft (ngram-map-k would draft 8 9)
    assert ValueMap(1, 2, 1).draft(A([0, 5, 6, 7, 5, 8, 9, 0, 5])) == []
    # 6 7 twice, 8 9 once (at the match, 7): 2 >= 2 * 1, drafted; the tokens drafted are those after the match,
    # 8 9, not the most frequent value 6 7 (llama.cpp copies from match_pos)
    vm = ValueMap(1, 2, 1)
    assert vm.draft(A([0, 5, 6, 7, 5, 6, 7, 5, 8, 9, 0, 5])) == [8, 9]
    assert [v[:2] for v in vm.key_stats[0].values] == [[2, 2], [8, 1], [0, 0], [0, 0]]


def test_min_hits_counts_the_lookups_that_found_the_key() -> None:
    vm = ValueMap(1, 2, min_hits=2)
    assert vm.draft(A(TWICE)) == []  # found once: not yet; no statistics counted
    assert vm.key_stats[0].num == 1 and vm.key_stats[0].values[0] == [0, 0, 2]
    assert vm.draft(A(TWICE + [3, 5])) == [6, 7]  # found again (the table's start 4): starts 1 and 4 counted


def test_the_cap_after_a_partial_accept_and_the_match_counted_again() -> None:
    vm = ValueMap(1, 2, 1)
    assert vm.draft(A(TWICE)) == [6, 7]
    vm.accept(1)  # one of two accepted: the value drafts at most one token next time
    # the table gives start 4 again; the statistics resume at 4 (stat_idx), so start 4 is counted a third time
    assert vm.draft(A(TWICE + [6, 9, 9, 5])) == [6]
    assert vm.key_stats[0].values[0] == [2, 3, 1]
    vm.accept(0)
    assert vm.draft(A(TWICE + [6, 9, 9, 5, 2, 5])) == []  # accepted nothing: min(size_m, 0) tokens
    vm.accept(2)  # after an empty draft the map still updates its value (the server calls it only after a verified one)
    assert vm.draft(A(TWICE + [6, 9, 9, 5, 2, 5, 4, 5])) == [6, 7]


def test_the_value_cleanup_moves_later_values_left() -> None:
    stats = KeyStats(size_m=3)
    stats.values = [[2, 5, 1], [9, 1, 2], [4, 2, 3], [12, 1, 0]]
    stats.drop_from(8)  # values at 9 and 12 go; 4 moves to slot 1; the emptied slots keep slot 3's n_accepted
    assert stats.values == [[2, 5, 1], [4, 2, 3], [0, 0, 0], [0, 0, 0]]


def test_a_shorter_prompt_drops_the_keys_past_it() -> None:
    vm = ValueMap(1, 2, 1)
    vm.begin(3)
    assert vm.draft(A(TWICE)) == [6, 7] and vm.key_starts == [4]
    vm.begin(2)  # shorter than the 8 tokens checked: keys at or past max(0, 2 - 1 - 2) = 0 go
    assert vm.key_starts == [] and vm.key_stats == [] and vm.table == {}


def test_the_drafter_accepts_what_the_engine_verified_and_copies() -> None:
    d = NgramMapK4vDrafter(NgramMapK4vConfig(size_n=1, size_m=2))
    d.begin([0, 5, 6])
    tree = d.propose(DraftContext(TWICE, 3, None, max_depth=1))
    assert tree.tokens == (6,)  # cut to max_depth after the lookup
    d.observe(StepResult(DraftTree.chain([6]), [0], 7))
    assert d.map.key_stats[0].values[0][2] == 1
    assert copy.deepcopy(d).map.key_stats[0].values[0][2] == 1 and d.keeps_state_across_generations


def test_config_is_llama_cpp_s() -> None:
    cfg = NgramMapK4vConfig()
    assert (cfg.size_n, cfg.size_m, cfg.min_hits) == (12, 48, 1)
    with pytest.raises(ConfigError, match="between 1 and 1024"):
        from_dict(NgramMapK4vConfig, {"size_m": 0})
    with pytest.raises(ConfigError, match="min_hits"):
        from_dict(NgramMapK4vConfig, {"min_hits": 0})
    assert METHODS.get("ngram-map-k4v").config_cls is NgramMapK4vConfig


@pytest.mark.parametrize("family", FAMILIES)
def test_lossless_alone_batched_and_under_budget_auto(family: str) -> None:
    check_lossless(family, lambda: NgramMapK4vDrafter(NgramMapK4vConfig(size_n=1, size_m=2)))
