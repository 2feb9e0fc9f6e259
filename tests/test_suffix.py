"""SuffixDecoding: the suffix index (insert, counts, match), speculation-tree growth, the drafter's learning,
and exactness on tiny models.

The automaton and the speculation are checked against a naive model of the reference's suffix trees
written here from its definition (every substring of at most ``max_depth`` tokens with its number of
occurrences) on random sequences, and on hand-worked examples.
"""
from __future__ import annotations

import doctest
import heapq
import random
from collections import Counter

import pytest
import torch

from conftest import make_tiny_model
from specbench_methods.suffix import automaton, speculate as speculate_module
from specbench_methods.suffix.automaton import SuffixAutomaton
from specbench_methods.suffix.method import SuffixConfig, SuffixDrafter
from specbench_methods.suffix.speculate import Draft, Limits, speculate
from specbench.config.coerce import from_dict
from specbench.engine.drafter import DraftContext
from specbench.engine.loop import Engine
from specbench.errors import ConfigError

FAMILIES = ["llama", "qwen2", "gpt2", "neox"]


def test_docstring_examples() -> None:
    for mod in (automaton, speculate_module):
        assert doctest.testmod(mod).failed == 0, mod.__name__


# -- the index ---------------------------------------------------------------------------------


def test_counts_and_continuations_by_hand() -> None:
    a = SuffixAutomaton()
    a.extend_all(0, [1, 2, 3, 1, 2, 4])
    a.extend_all(0, [2, 3, 5])  # a second sequence: no substring spans the two
    assert a.count[0] == 9  # the root: one suffix per token inserted
    assert [a.count_of(s) for s in ([1, 2], [2, 3], [2], [3], [4, 2], [2, 3, 1], [3, 5], [4, 2, 3])] == \
        [2, 2, 3, 2, 0, 1, 1, 0]
    s = a.walk([2])  # 2 is followed by 3 (twice) and 4 (once)
    assert sorted((t, a.count[c]) for t, c in a.next[s].items()) == [(3, 2), (4, 1)]
    # which occurrence was latest: [2, 3] (the second sequence) after [2, 4]
    assert a.stamp[a.walk([2, 3])] > a.stamp[a.walk([2, 4])]
    state, m = a.match([9, 9, 1, 2, 3])
    assert m == 3 and a.count[state] == 1 and a.count[a.shorten(state, 2)] == 2
    assert a.match([9]) == (0, 0)


def naive_index(seqs: list[list[int]], depth: int) -> tuple[Counter, dict]:
    """The reference's suffix tree as a table: every substring of at most ``depth`` tokens -> its count and
    the tick of its latest occurrence (one tick per token inserted, in order)."""
    count: Counter = Counter()
    last: dict = {}
    tick = 0
    for seq in seqs:
        for j in range(len(seq)):
            tick += 1
            for i in range(max(0, j - depth + 1), j + 1):
                s = tuple(seq[i : j + 1])
                count[s] += 1
                last[s] = tick
    return count, last


def naive_speculate(count: Counter, last: dict, vocab: int, pattern: list[int], lim: Limits) -> Draft:
    """The reference's ``speculate`` over the table: match lengths ascending, ties to the longer."""

    def children(s: tuple, prob: float) -> list:
        total = count[s]
        kids = [(count[s + (t,)], last[s + (t,)], t) for t in range(vocab) if count[s + (t,)] > 0]
        kids = [k for k in kids if prob * k[0] / total >= lim.min_token_prob]
        kids.sort(key=lambda k: (-k[0], -k[1]))
        return [(prob * n / total, t) for n, _, t in kids]

    def grow(s: tuple, m: int, budget: int) -> Draft:
        d = Draft(match_len=m)
        heap, order = [], 0

        def push(st: tuple, prob: float, parent: int, depth: int) -> None:
            nonlocal order
            if depth > lim.depth_cap or m + depth > lim.max_depth:
                return
            for p, t in children(st, prob):
                heapq.heappush(heap, (-p, order, t, st + (t,), parent, depth))
                order += 1
                if not lim.tree:
                    break

        push(s, 1.0, -1, 1)
        while heap and len(d.tokens) < budget:
            negp, _, t, st, parent, depth = heapq.heappop(heap)
            d.tokens.append(t)
            d.parents.append(parent)
            d.probs.append(-negp)
            d.score += -negp
            push(st, -negp, len(d.tokens) - 1, depth + 1)
        return d

    best = Draft()
    for m in range(1, len(pattern)):
        s = tuple(pattern[-m:])
        if count[s] == 0:
            break
        d = grow(s, m, lim.budget(m))
        if d.score >= best.score:
            best = d
    return best


@pytest.mark.parametrize("seed", range(6))
def test_index_and_speculation_equal_the_naive_suffix_tree(seed: int) -> None:
    rng = random.Random(seed)
    vocab, depth = rng.choice([(3, 8), (4, 10), (6, 64)])
    seqs = [[rng.randrange(vocab) for _ in range(rng.randint(5, 60))] for _ in range(rng.randint(1, 4))]
    if seed % 2:  # repetitive text: long matches, long drafts, the depth limit binds
        seqs.append((seqs[0][:7] * 9)[:50])
    a = SuffixAutomaton()
    for seq in seqs:
        a.extend_all(0, seq)
    count, last = naive_index(seqs, depth)
    for s, n in count.items():
        assert a.count_of(list(s)) == n, s
    assert a.count[0] == sum(map(len, seqs)) and a.count_of([vocab]) == 0
    patterns = [seq[: rng.randint(1, len(seq))] for seq in seqs for _ in range(4)]
    patterns += [[rng.randrange(vocab) for _ in range(rng.randint(1, 12))] for _ in range(6)]
    settings = [Limits(max_depth=depth), Limits(max_depth=depth, tree=False),
                Limits(max_depth=depth, alpha=2.0, offset=1.0, min_token_prob=0.25, max_spec_tokens=7),
                Limits(max_depth=depth, alpha=0.5, depth_cap=2), Limits(max_depth=depth, min_token_prob=0.0)]
    sizes = []
    for pattern in patterns:
        pattern = pattern[-depth:]
        for lim in settings:
            got = speculate(a, pattern, lim)
            want = naive_speculate(count, last, vocab, pattern, lim)
            assert (got.tokens, got.parents, got.match_len) == (want.tokens, want.parents, want.match_len), (pattern, lim)
            assert got.probs == pytest.approx(want.probs) and got.score == pytest.approx(want.score)
            sizes.append(len(got.tokens))
    assert max(sizes) >= 4 and sum(s > 1 for s in sizes) > len(sizes) // 4  # real trees were compared


def test_speculation_tree_by_hand() -> None:
    # earlier answers: "1 2 3 4" twice, "1 2 5" once; pattern ends with "1 2"
    a = SuffixAutomaton()
    for seq in ([1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 5]):
        a.extend_all(0, seq)
    d = speculate(a, [9, 1, 2], Limits())  # m = 2: budget 2; 3 (2/3), then 4 (2/3 * 1) before 5 (1/3)
    assert (d.tokens, d.parents, d.match_len) == ([3, 4], [-1, 0], 2)
    assert d.probs == pytest.approx([2 / 3, 2 / 3]) and d.score == pytest.approx(4 / 3)
    d = speculate(a, [9, 1, 2], Limits(alpha=2.0))  # budget 4: 3, 4, then 5 (1/3); nothing follows 4
    assert (d.tokens, d.parents) == ([3, 4, 5], [-1, 0, -1])
    assert speculate(a, [9, 1, 2], Limits(alpha=2.0, min_token_prob=0.5)).tokens == [3, 4]  # 5 (1/3) dropped
    assert speculate(a, [9, 1, 2], Limits(alpha=2.0, depth_cap=1)).tokens == [3, 5]  # siblings only
    assert speculate(a, [9, 1, 2], Limits(alpha=2.0, tree=False)).tokens == [3, 4]  # one path
    assert speculate(a, [9, 1, 2], Limits(max_depth=3)).tokens == [3, 5]  # match 2 + depth 1 = the trees' depth
    assert speculate(a, [7, 8], Limits()).tokens == []


# -- the drafter -------------------------------------------------------------------------------


def ctx(tokens: list[int], prompt_len: int, depth: int = 64) -> DraftContext:
    return DraftContext(tokens=tokens, prompt_len=prompt_len, hidden=torch.zeros(2), max_depth=depth)


def state_of(d: SuffixDrafter) -> tuple:
    a = d.answers
    return a.next, a.link, a.length, a.count, a.stamp


def test_drafter_uses_the_prompt_and_earlier_answers() -> None:
    d = SuffixDrafter(SuffixConfig())
    prompt = [1, 2, 3, 4, 5, 1, 2]
    d.begin(prompt)
    tree = d.propose(ctx(prompt + [3], len(prompt)))  # "2 3" and "1 2 3" occurred: 4 5 ... from the prompt
    assert tree.tokens[:2] == (4, 5) and tree.parents[:2] == (-1, 0)
    d.learn(prompt, [3, 8, 9, 10, 11])
    d.begin([7, 7])
    tree = d.propose(ctx([7, 7, 8, 9], 2))  # only the earlier answer knows what follows "8 9"
    assert tree.tokens == (10, 11)
    off = SuffixDrafter(SuffixConfig(use_global=False))
    off.begin(prompt)
    off.propose(ctx(prompt + [3], len(prompt)))
    off.learn(prompt, [3, 8, 9, 10, 11])
    off.begin([7, 7])
    assert off.propose(ctx([7, 7, 8, 9], 2)) is None and len(off.answers) == 1


def test_learning_a_generated_answer_equals_replaying_it() -> None:
    """What the runner relies on for resumed runs: the live drafter (answer inserted while generated, the
    last tokens at ``learn``) and a fresh one replayed the same answers hold the same index."""
    live, replayed = SuffixDrafter(SuffixConfig()), SuffixDrafter(SuffixConfig())
    rng = random.Random(3)
    for _ in range(4):
        prompt = [rng.randrange(6) for _ in range(10)]
        answer = [rng.randrange(6) for _ in range(15)]
        live.begin(prompt)
        for n in (1, 4, 9, 12):  # steps saw 1, 4, 9, 12 answer tokens; the last 3 only reach learn
            live.propose(ctx(prompt + answer[:n], len(prompt)))
        live.learn(prompt, answer)
        replayed.learn(prompt, answer)
        assert state_of(live) == state_of(replayed)
    # an answer never learned stays in the index (the reference caches every response) but is not doubled
    live.begin([1])
    live.propose(ctx([1, 2, 3], 1))
    live.begin([1])
    assert live.answers.count[0] == replayed.answers.count[0] + 2


def test_config_validation() -> None:
    assert from_dict(SuffixConfig, {"alpha": "2.5"}).alpha == 2.5
    for bad in ({"alpha": "-1"}, {"max_depth": "1"}, {"min_token_prob": "2"}, {"max_spec_tokens": "0"}):
        with pytest.raises(ConfigError):
            from_dict(SuffixConfig, bad)


# -- exactness on tiny models ------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_suffix_equals_greedy_with_noise_and_with_its_own_answers(family: str) -> None:
    model = make_tiny_model(family, seed=21)
    engine = Engine(model, stop_ids=set())
    rng = random.Random(family)
    for trial in range(2):
        prompt = [rng.randrange(64) for _ in range(10)]
        prompt = prompt + prompt[:6]  # a repeat: the prompt index drafts from the start
        ref = engine.generate(prompt, None, 40).output_ids
        noisy = SuffixDrafter(SuffixConfig(min_token_prob=0.0))
        for _ in range(5):  # earlier "answers" of random tokens: drafts mostly rejected
            noisy.learn([], [rng.randrange(64) for _ in range(80)])
        gen = engine.generate(prompt, noisy, 40)
        assert gen.output_ids == ref and sum(gen.draft_sizes) > 0
        # oracle-like: the second generation of the same prompt drafts from the first's answer
        d = SuffixDrafter(SuffixConfig())
        first = engine.generate(prompt, d, 40)
        d.learn(prompt, first.output_ids)
        second = engine.generate(prompt, d, 40)
        assert first.output_ids == second.output_ids == ref
        assert second.forward_passes < first.forward_passes
        assert second.forward_passes <= 12  # 40 tokens: the answer is copied in long accepted drafts
