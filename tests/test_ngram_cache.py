"""``ngram-cache`` (llama.cpp's ``--spec-type ngram-cache``, lookup decoding): its rules on constructed token
sequences, each draft computed by hand as ``common_ngram_cache_update`` / ``common_ngram_cache_draft`` and the
server's ``common_speculative_impl_ngram_cache`` would, and its output equal to AR's on the tiny families, alone,
at batch size 2 and under ``budget=auto``. (No accept: the server's ngram-cache ignores acceptance, so there is
no cap after a partial accept to test.)"""
from __future__ import annotations

import copy

import pytest

from specbench_methods.ngram.cache import NgramCacheConfig, NgramCacheDrafter, add_chunk, draft_from
from ngram_lossless import check_lossless
from specbench.engine.drafter import DraftContext
from specbench.plugins.registry import METHODS
from test_engine_exact import FAMILIES


def cache_of(*chunks: list[int]) -> dict:
    cache: dict = {}
    for chunk in chunks:
        add_chunk(cache, chunk)
    return cache


def test_a_match_and_no_match() -> None:
    # (5,) -> 6 twice: a 1-gram needs 2 samples and 66%; then (5, 6) -> 7 once (a 2-gram needs 2) and (6,) -> 7
    # once: the draft stops after one token
    assert draft_from(cache_of([4, 5, 6, 7, 5, 6]), [9, 5]) == [6]
    assert draft_from(cache_of([4, 5, 6]), [9, 5]) == []  # (5,) -> 6 once: too few samples
    assert draft_from(cache_of([4, 5, 6, 7, 5, 6]), [9, 8]) == []  # nothing seen after 8
    assert draft_from(cache_of([4, 5, 6, 7, 5, 6]), [5]) == []  # a text of one token: no draft at all


def test_the_share_thresholds_by_ngram_size() -> None:
    assert draft_from(cache_of([5, 6, 5, 6, 5, 7]), [9, 5])[:1] == [6]  # 2 of 3 = 66.7% >= 66%
    assert draft_from(cache_of([5, 6, 5, 7]), [9, 5]) == []  # 1 of 2 = 50% < 66% for a 1-gram
    # (1, 5) -> 6 and -> 7: 50% suffices for a 2-gram; the tie goes to the token first seen last (llama.cpp's
    # std::unordered_map, libstdc++, iterates the newest first)
    assert draft_from(cache_of([1, 5, 6, 1, 5, 7]), [1, 5])[:1] == [7]


def test_the_largest_ngram_first() -> None:
    # (5,) -> 6 three times, (2, 5) -> 8 once, (3, 2, 5) -> 8 once: the 3-gram (one sample suffices) wins
    cache = cache_of([5, 6, 5, 6, 5, 6, 3, 2, 5, 8])
    assert draft_from(cache, [0, 3, 2, 5])[:1] == [8]
    assert draft_from(cache, [0, 4, 1, 5])[:1] == [6]  # no longer n-gram seen: the 1-gram


def test_at_most_eight_tokens_and_the_engine_cut() -> None:
    text = [1, 2, 3] * 5
    assert len(draft_from(cache_of(text), text)) == 8
    d = NgramCacheDrafter(NgramCacheConfig())
    assert d.propose(DraftContext(text, 6, None, max_depth=3)).tokens == (1, 2, 3)
    assert d.propose(DraftContext(text, 6, None, max_depth=0)) is None


def test_the_context_cache_counts_ngrams_inside_each_chunk_and_outlives_requests() -> None:
    d = NgramCacheDrafter(NgramCacheConfig())
    d.propose(DraftContext([1, 2, 3], 2, None, max_depth=8))  # the whole text (history + root) as one chunk
    assert d.cache_size == 3 and d.cache[(2,)] == {3: 1}
    d.propose(DraftContext([1, 2, 3, 4, 5], 2, None, max_depth=8))  # the chunk [4, 5]: (3,) -> 4 never counted
    assert d.cache_size == 5 and d.cache[(4,)] == {5: 1} and (3,) not in d.cache
    d.begin([7, 7])  # another request: the cache and its position are kept (the server's begin is a no-op)
    d.propose(DraftContext([7, 7, 7], 2, None, max_depth=8))  # 3 tokens < 5: nothing added
    assert (7,) not in d.cache
    d.propose(DraftContext([7, 7, 7, 7, 8, 9], 2, None, max_depth=8))  # from position 5 on: [9]
    assert (7,) not in d.cache and d.cache_size == 6
    assert copy.deepcopy(d).cache == d.cache and d.keeps_state_across_generations


def test_no_options() -> None:
    assert METHODS.get("ngram-cache").config_cls is NgramCacheConfig


@pytest.mark.parametrize("family", FAMILIES)
def test_lossless_alone_batched_and_under_budget_auto(family: str) -> None:
    check_lossless(family, lambda: NgramCacheDrafter(NgramCacheConfig()))
