"""Lookahead decoding: the Jacobi window's layout and updates on constructed predictions, the n-gram
pool's LRU rule, and end-to-end exactness with drafts that really get accepted."""
from __future__ import annotations

import random

import pytest

from conftest import make_tiny_model
from methods.lookahead.method import LookaheadConfig, LookaheadDrafter
from methods.lookahead.pool import NgramPool
from methods.lookahead.window import JacobiWindow
from specbench.config import ConfigError
from specbench.engine.loop import Engine
from test_engine_exact import FAMILIES, greedy_reference


def test_window_fills_then_emits_diagonal_ngrams() -> None:
    w = JacobiWindow(window=2, n=4, prompt=[10, 11, 12], rng=random.Random(0))
    assert len(w.levels[0]) == 3 and not w.full  # window + n - 3 guesses on level 0
    a = w.layout()
    assert a.offsets == (1, 2, 3)
    assert w.advance(99, [1, 2, 3]) == []  # fill: level 1 = predictions at level 0
    assert w.levels == [w.levels[0], [1, 2, 3]] and len(w.levels[0]) == 2
    first = list(w.levels[0])
    a = w.layout()
    assert a.offsets == (1, 2, 1, 2, 3)  # level 0 guesses, then level 1 at offsets 1 + column
    assert w.advance(99, [0, 0, 4, 5, 6]) == []  # fill: level 2 = level 1's predictions minus column 0
    assert w.full and w.levels[1:] == [[2, 3], [5, 6]] and w.levels[0] == first[1:]
    a = w.layout()
    assert a.offsets == (1, 1, 2, 2, 3)
    # level-2 column 1 (row 4) sees level 0 column 1 (row 0), level 1 column 1 (row 2) and itself
    assert a.attends[4].tolist() == [True, False, True, False, True]
    grams = w.advance(77, [0, 0, 0, 8, 9])
    assert grams == [(77, 2, 5, 8), (first[1], 3, 6, 9)]
    assert w.levels == [[3], [5, 6], [8, 9]]


def test_pool_keeps_the_most_recent_guesses_per_key() -> None:
    pool = NgramPool(n=3, guess=2)
    pool.add_sequence([1, 2, 3, 1, 2, 4, 1, 5, 6])
    assert pool.guesses(1) == [(2, 4), (5, 6)]  # (2, 3) was the oldest of three
    pool.add(1, (2, 4))  # seen again: moves to the back
    assert pool.guesses(1) == [(5, 6), (2, 4)]
    assert pool.guesses(42) == []
    silent = NgramPool(n=3, guess=0)
    silent.add_sequence([1, 2, 3])
    assert len(silent) == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_lookahead_output_is_ar_and_drafts_get_accepted(family: str) -> None:
    model = make_tiny_model(family, seed=2)
    prompt = [7, 3, 9, 3, 9, 4, 7, 3, 9, 1]
    expected = greedy_reference(model, prompt, 40)
    drafter = LookaheadDrafter(LookaheadConfig(window=4, ngram=4, guess=4))
    gen = Engine(model, stop_ids=set()).generate(prompt, drafter, 40)
    assert gen.output_ids == expected
    assert max(gen.aux_sizes) == 4 * 3 - 1  # (n - 1) * window - 1 rows once the window is full
    assert max(gen.draft_sizes) > 0
    assert max(gen.accept_lengths) > 1  # some pool n-gram was accepted


def test_bad_config_is_refused() -> None:
    for bad in (LookaheadConfig(window=0), LookaheadConfig(ngram=2), LookaheadConfig(guess=-1)):
        with pytest.raises(ConfigError):
            bad.validate()
