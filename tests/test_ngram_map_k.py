"""``ngram-map-k`` (llama.cpp's ``--spec-type ngram-map-k``): its rules on constructed token sequences, each draft
computed by hand as llama.cpp's ``common_ngram_map_draft`` (key-only) and ``common_ngram_map_accept`` would (and
checked against those functions compiled from the reference commit on 19,561 simulated steps), its state across
requests, and its output equal to AR's on the tiny families, alone, at batch size 2 and under ``budget=auto``."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from specbench_methods.ngram.key_map import KeyMap, bucket_of
from specbench_methods.ngram.map_k import NgramMapKConfig, NgramMapKDrafter
from specbench.config.coerce import from_dict
from specbench.engine.drafter import DraftContext, StepResult
from specbench.engine.tree import DraftTree
from specbench.errors import ConfigError
from ngram_lossless import check_lossless
from test_engine_exact import FAMILIES

A = np.array


def test_a_match_drafts_size_m_and_no_match_nothing() -> None:
    km = KeyMap(2, 3)
    km.begin(8)
    # key [5, 6] (history's last token and the root) at 1, followed by 7 8 9: a new key drafts size_m = 3
    assert km.draft(A([4, 5, 6, 7, 8, 9, 1, 2, 5, 6])) == [7, 8, 9]
    assert km.draft(A([4, 5, 6, 7, 8, 9, 1, 2, 5, 3])) == []  # [5, 3] never occurred
    # a history of 6 < 2 * 2 + 3: no lookup at all, though [5, 6] occurred at 1; of 7, drafted
    assert KeyMap(2, 3).draft(A([4, 5, 6, 7, 8, 5, 6])) == []
    assert KeyMap(2, 3).draft(A([4, 5, 6, 7, 8, 9, 5, 6])) == [7, 8, 9]


def test_an_occurrence_needs_size_m_tokens_after_it_before_the_root() -> None:
    # [1, 2] at 5 has only 7 8 after it before the root: too late (starts up to 10 - 2 - 3 - 1 = 4); at 1 it qualifies
    assert KeyMap(2, 3).draft(A([0, 1, 2, 3, 4, 1, 2, 7, 8, 1, 2])) == [3, 4, 1]
    assert KeyMap(2, 3).draft(A([0, 0, 0, 0, 0, 1, 2, 7, 8, 1, 2])) == []  # only the late one: none
    # starts from the prompt's length - 2 - 3 up to its length are never searched (llama.cpp's two scans
    # stop at 8 - 2 - 3 - 1 = 2 and start above 8): the occurrence at 3 is missed
    km = KeyMap(2, 3)
    km.begin(8)
    assert km.draft(A([0, 9, 9, 1, 2, 3, 4, 5, 6, 6, 6, 1, 2])) == []
    assert KeyMap(2, 3).draft(A([0, 9, 9, 1, 2, 3, 4, 5, 6, 6, 6, 1, 2])) == [3, 4, 5]  # without that prompt


def test_the_cap_after_a_partial_accept_and_a_key_that_accepted_nothing() -> None:
    km = KeyMap(2, 3)
    km.begin(8)
    text = [4, 5, 6, 7, 8, 9, 1, 2, 5, 6]
    assert km.draft(A(text)) == [7, 8, 9]
    km.accept(2)  # two of three accepted: the key drafts at most two next time
    text += [7, 8, 0, 3, 5, 6]
    assert km.draft(A(text)) == [7, 8]
    km.accept(0)  # nothing accepted: min(size_m, 0) = 0, so the key never drafts again
    text += [1, 5, 6]
    assert km.draft(A(text)) == []
    assert km.draft(A(text + [9, 9])) == []  # another key: nothing found, nothing changed
    km.accept(3)  # after a step without a draft, accept has nothing to update
    assert km.draft(A(text + [9, 5, 6])) == []


def test_state_across_requests_and_the_cleanup_of_a_shorter_prompt() -> None:
    km = KeyMap(2, 3)
    km.begin(8)
    assert km.draft(A([4, 5, 6, 7, 8, 9, 1, 2, 5, 6])) == [7, 8, 9]
    km.accept(1)
    # the next request, as long: its key [5, 6] at 1 is the same key (compared in the new text): capped at 1
    km.begin(9)
    assert km.draft(A([3, 5, 6, 0, 8, 9, 1, 2, 2, 5, 6])) == [0]
    # a shorter prompt (6 < 10 checked): keys and table entries at or past 6 - 2 - 3 = 1 go, so the cap goes too
    km.begin(6)
    assert km.key_starts == [] and km.table == {}
    assert km.draft(A([3, 5, 6, 0, 8, 9, 1, 2, 2, 5, 6, 0, 8, 9, 4, 4, 5, 6])) == [0, 8, 9]  # [5, 6] at 9, anew


def test_the_table_keeps_the_first_start_written_in_a_bucket() -> None:
    km = KeyMap(1, 1)
    km.begin(0)
    # starts 4 down to 1 enter the table in that order: [7]'s bucket keeps 4 (1 comes later, into a full bucket)
    assert km.draft(A([0, 7, 2, 3, 7, 5, 7, 1])) == []
    assert km.table[int(bucket_of(A([7]), np.zeros(1, dtype=np.int64), 1)[0])] == 4
    # the table is asked first: [7] drafts what followed it at 4, not at its latest start 6 (which gives [1])
    assert km.draft(A([0, 7, 2, 3, 7, 5, 7, 1, 8, 8, 7])) == [5]


def test_the_drafter_accepts_what_the_engine_verified_and_copies_cheaply() -> None:
    d = NgramMapKDrafter(NgramMapKConfig(size_n=2, size_m=3))
    d.begin([4, 5, 6, 7, 8, 9, 1, 2])
    tree = d.propose(DraftContext([4, 5, 6, 7, 8, 9, 1, 2, 5, 6], 8, None, max_depth=2))
    assert tree.tokens == (7, 8)  # cut to max_depth after the lookup, as the server's n_max cut
    d.observe(StepResult(DraftTree.chain([7]), [0], 3))  # the verified (cut) tree: one accepted
    assert d.map.key_accepted == [1]
    d.observe(StepResult(None, [], 3))  # a step without the drafter's tree: no accept
    assert d.map.key_accepted == [1]
    assert copy.deepcopy(d).map.key_accepted == [1] and d.keeps_state_across_generations


def test_config_is_llama_cpp_s() -> None:
    assert (NgramMapKConfig().size_n, NgramMapKConfig().size_m) == (12, 48)
    with pytest.raises(ConfigError, match="between 1 and 1024"):
        from_dict(NgramMapKConfig, {"size_n": 0})


@pytest.mark.parametrize("family", FAMILIES)
def test_lossless_alone_batched_and_under_budget_auto(family: str) -> None:
    check_lossless(family, lambda: NgramMapKDrafter(NgramMapKConfig(size_n=1, size_m=2)))
