"""Lookahead decoding: the Jacobi window's layout and updates on constructed predictions, the n-gram
pool's LRU rule, and end-to-end exactness with drafts that really get accepted."""
from __future__ import annotations

import random

import pytest

from conftest import make_tiny_model
from specbench_methods.lookahead.method import LookaheadConfig, LookaheadDrafter
from specbench_methods.lookahead.pool import NgramPool
from specbench_methods.lookahead.window import JacobiWindow
from specbench.errors import ConfigError
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
    drafter = LookaheadDrafter(LookaheadConfig(window=4, ngram=4, guess=4, pool_from_prompt=True))
    gen = Engine(model, stop_ids=set()).generate(prompt, drafter, 40)
    assert gen.output_ids == expected
    assert max(gen.aux_sizes) == 4 * 3 - 1  # (n - 1) * window - 1 rows once the window is full
    assert max(gen.draft_sizes) > 0
    assert max(gen.accept_lengths) > 1  # some pool n-gram was accepted


def test_bad_config_is_refused() -> None:
    for bad in (LookaheadConfig(window=0), LookaheadConfig(ngram=2), LookaheadConfig(guess=-1)):
        with pytest.raises(ConfigError):
            bad.validate()


class _FixedPool:
    """A pool that always offers one continuation and ignores what the window learns."""

    def __init__(self, continuation: tuple[int, ...]) -> None:
        self.continuation = continuation

    def guesses(self, key: int) -> list[tuple[int, ...]]:
        return [self.continuation] if self.continuation else []

    def add(self, key: int, continuation) -> None:
        pass


def _oracle_lookahead(config: LookaheadConfig, prompt: list[int], expected: list[int]) -> LookaheadDrafter:
    """A Lookahead drafter whose only guess is always the next N - 1 tokens of AR's output."""

    class Oracle(LookaheadDrafter):
        def propose(self, ctx):
            done = len(ctx.tokens) - len(prompt)  # tokens generated so far, the root included
            self.pool = _FixedPool(tuple(expected[done : done + config.ngram - 1]))
            return super().propose(ctx)

    return Oracle(config)


@pytest.mark.parametrize("bonus, per_step", [(False, 3), (True, 4)])
def test_full_match_step_emits_n_minus_1_as_the_reference_or_n_with_bonus(bonus: bool, per_step: int) -> None:
    """LADE (``jacobi_greedy_search_multilevel``) emits at most N - 1 tokens when all N - 1 guessed tokens
    match: the target's token after the last guess is dropped. ``bonus=true`` keeps it."""
    model = make_tiny_model("llama", seed=3)
    prompt = [5, 8, 2, 9, 4, 1]
    n, total = 4, 30
    expected = greedy_reference(model, prompt, total)
    drafter = _oracle_lookahead(LookaheadConfig(window=3, ngram=n, guess=1, bonus=bonus), prompt, expected)
    gen = Engine(model, stop_ids=set()).generate(prompt, drafter, total)
    assert gen.output_ids == expected
    verified = [a for a, d in zip(gen.accept_lengths, gen.draft_sizes) if d == n - 1]  # whole guess verified
    assert len(verified) >= 4
    assert set(verified) == {per_step}  # every guess matches: N - 1 tokens (reference) or N (bonus)


def test_pool_update_from_emitted_tokens_reference_and_true_ngrams() -> None:
    """With ``pool_from_prompt``, LADE appends the step's last token once per emitted token to the history
    it takes n-grams from; ``true_ngrams`` stores the n-grams actually emitted."""
    for true_ngrams, expected in ((False, {1: [(2, 4)], 2: [(4, 4)]}), (True, {1: [(2, 3)], 2: [(3, 4)]})):
        drafter = LookaheadDrafter(LookaheadConfig(ngram=3, pool_from_prompt=True, true_ngrams=true_ngrams))
        drafter.begin([1, 2])
        assert len(drafter.pool) == 0  # a 2-token prompt has no 3-gram
        drafter._pool_emitted([1, 2, 3, 4])  # one step emitted 3, 4
        assert {k: drafter.pool.guesses(k) for k in (1, 2)} == expected


def test_capped_verification_keeps_a_prefix_and_its_last_token_as_bonus() -> None:
    import torch

    from specbench.engine.verify import Verification

    ver = Verification(rows=[0, 2, 5, 6], accepted=[4, 5, 6], bonus=7, hidden=torch.zeros(7, 2), token_logprobs=[-1.0, -2.0, -3.0, -4.0])
    capped = ver.capped(2)
    assert (capped.rows, capped.accepted, capped.bonus, capped.token_logprobs) == ([0, 2, 5], [4, 5], 6, [-1.0, -2.0, -3.0])
    assert ver.capped(3) is ver and ver.capped(None) is ver
    assert ver.capped(0).accepted == [] and ver.capped(0).bonus == 4
