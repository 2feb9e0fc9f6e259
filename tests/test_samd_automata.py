"""SAM-Decoding's suffix automata on hand-worked examples: the dynamic one built online, the static one built
from a suffix array (equal to the online construction on random texts), matching, read-outs, drafting rules."""
from __future__ import annotations

import random

import numpy as np
import pytest

from specbench_methods.samd.draft import alone_draft, alone_size, frequency_tree, retrieval_chain
from specbench_methods.samd.dyn_sam import DynamicSAM
from specbench_methods.samd.static_build import build_sam_arrays, nearest_smaller_left, range_max
from specbench_methods.samd.static_sam import StaticSAM
from specbench.engine.tree import DraftTree

A, B, C = 1, 2, 3


def test_dynamic_worked_example_aba() -> None:
    """The module docstring's table for ``a b a``."""
    sam = DynamicSAM()
    sam.extend_all([A, B, A])
    assert sam.length == [0, 1, 2, 3] and sam.link == [-1, 0, 0, 1] and sam.first_end == [-1, 0, 1, 2]
    assert sam.next == [{A: 1, B: 2}, {B: 2}, {A: 3}, {}]
    assert (sam.match_state, sam.match_len) == (1, 1)  # "a" is the longest suffix seen before the end
    assert sam.lookup(B) == (2, 2)  # "a b": first ends at 1, so the draft continues with "a"
    assert sam.continuation(2, 5) == [A]
    assert sam.lookup(C) == (0, 0) and sam.continuation(0, 5) == []


def test_dynamic_clone_abb() -> None:
    """``a b b``: adding the second ``b`` splits state {"ab", "b"} and clones "b" (length 1, first end 1)."""
    sam = DynamicSAM()
    sam.extend_all([A, B])
    assert sam.length == [0, 1, 2] and sam.next[0] == {A: 1, B: 2}
    sam.extend(B)
    # states: 0 "", 1 "a", 2 "ab", 3 "abb", 4 "b" (the clone)
    assert sam.length == [0, 1, 2, 3, 1] and sam.link == [-1, 0, 4, 4, 0]
    assert sam.first_end == [-1, 0, 1, 2, 1]
    assert sam.next[0] == {A: 1, B: 4} and sam.next[4] == {B: 3}
    assert (sam.match_state, sam.match_len) == (4, 1)  # "b" occurred before the end: the match moved to the clone
    assert sam.lookup(B) == (3, 2)  # "bb" is in state 3 ("abb", "bb"), first ending at 2


def test_match_follows_suffix_links() -> None:
    """The match drops its oldest tokens when the new one never followed it: ``x y z ... x y w``."""
    sam = DynamicSAM()
    sam.extend_all([7, 8, 9, 5, 7, 8])
    assert sam.match_len == 2  # "x y" occurred at 0..1
    state, length = sam.lookup(9)
    assert length == 3 and sam.continuation(state, 2) == [5, 7]
    state, length = sam.lookup(4)  # "x y w" never occurred, nor "y w" nor "w"
    assert (state, length) == (0, 0)
    sam.extend_all([5])  # now ... 7 8 5: "8 5" never occurred, "5" did (at 3)
    assert sam.match_len == 1 and sam.first_end[sam.match_state] == 3


def test_widen_prefers_a_match_with_enough_text_after_it() -> None:
    sam = DynamicSAM()
    sam.extend_all([2, 8, 8, 8, 1, 2, 3, 1])
    state, length = sam.lookup(2)  # "1 2" first ends at 5, 2 tokens follow; "2" first ends at 0, 7 follow
    assert length == 2 and sam.continuation(state, 10) == [3, 1]
    assert sam.continuation(sam.widen(state, 3), 3) == [8, 8, 8]
    assert sam.widen(state, 2) == state  # 2 tokens follow: enough


def test_incremental_match_equals_brute_force() -> None:
    """After every token, the match is the longest suffix of the text that occurs earlier in it."""
    rng = random.Random(1)
    for _ in range(50):
        text = [rng.randrange(3) for _ in range(rng.randint(1, 60))]
        sam = DynamicSAM()
        for i, t in enumerate(text):
            sam.extend(t)
            best = 0
            for L in range(1, i + 1):
                suffix = text[i + 1 - L : i + 1]
                if any(text[j : j + L] == suffix for j in range(0, i + 1 - L)):
                    best = L
            assert sam.match_len == best
            if best:
                first = next(j for j in range(i + 1) if text[j : j + best] == text[i + 1 - best : i + 1])
                assert sam.first_end[sam.match_state] == first + best - 1


def test_static_worked_example_aba() -> None:
    """``static_build.py``'s example: states root, "a" (interval of 2 suffixes), "aba" and "ab"."""
    a = build_sam_arrays(np.array([A, B, A]), 4)
    assert a.length.tolist() == [0, 1, 3, 2] and a.link.tolist() == [-1, 0, 1, 0]
    assert a.count.tolist() == [3, 2, 1, 1] and a.first_end.tolist() == [-1, 0, 2, 1]
    edges = {(s, int(t)): int(d) for s in range(4) for t, d in zip(a.edge_tok[a.edge_off[s] : a.edge_off[s + 1]],
                                                                   a.edge_dst[a.edge_off[s] : a.edge_off[s + 1]])}
    assert edges == {(0, A): 1, (0, B): 3, (1, B): 3, (3, A): 2}


def canonical(length, link, first_end, count, edges) -> dict:
    """Each state keyed by (first end, length), the identity of its longest string."""
    key = lambda s: (int(first_end[s]), int(length[s]))  # noqa: E731
    return {key(s): (key(link[s]) if link[s] >= 0 else None, count[s], {t: key(d) for t, d in edges[s].items()})
            for s in range(len(length))}


def online_canonical(text: list[int]) -> dict:
    sam = DynamicSAM()
    sam.extend_all(text)
    count = [0] * len(sam.length)
    v = 0
    for t in text:  # every prefix ends in one state; counts add up along suffix links
        v = sam.next[v][t]
        count[v] += 1
    for s in sorted(range(1, len(count)), key=lambda s: -sam.length[s]):
        count[sam.link[s]] += count[s]
    count[0] = len(text)
    return canonical(sam.length, sam.link, sam.first_end, count, sam.next)


def static_canonical(text: list[int], vocab: int) -> dict:
    a = build_sam_arrays(np.array(text, dtype=np.int32), vocab)
    edges = [dict(zip(a.edge_tok[a.edge_off[s] : a.edge_off[s + 1]].tolist(), a.edge_dst[a.edge_off[s] : a.edge_off[s + 1]].tolist()))
             for s in range(a.n_states)]
    assert all(list(e) == sorted(e) for e in edges)  # transitions sorted by token
    return canonical(a.length, a.link, a.first_end, a.count.tolist(), edges)


@pytest.mark.parametrize("seed", range(4))
def test_static_build_equals_online_construction(seed: int) -> None:
    """Same states, lengths, links, end counts, first ends and transitions, on random texts (runs of one
    token, tiny and larger alphabets, a first token that never recurs)."""
    rng = random.Random(seed)
    for trial in range(150):
        vocab = rng.choice([1, 2, 3, 5, 40])
        text = [rng.randrange(vocab) for _ in range(rng.randint(1, rng.choice([6, 40, 150])))]
        if trial % 10 == 0:
            text = [vocab] + text  # a token that occurs only at position 0
        assert static_canonical(text, vocab + 1) == online_canonical(text), text


def test_vectorised_helpers_equal_brute_force() -> None:
    rng = np.random.default_rng(0)
    h = np.concatenate([[-1], rng.integers(0, 5, 300)])
    left = nearest_smaller_left(h)
    for i in range(1, len(h)):
        smaller = [j for j in range(i) if h[j] < h[i]]
        assert left[i] == (smaller[-1] if smaller else 0)
    x = rng.integers(0, 1000, 500)
    lo = rng.integers(0, 500, 200)
    hi = np.minimum(lo + rng.integers(0, 300, 200), 499)
    assert range_max(x, lo, hi).tolist() == [int(x[a : b + 1].max()) for a, b in zip(lo, hi)]


def test_static_matching_and_readouts() -> None:
    corpus = [5, 6, 7, 8, 9, 5, 6, 7, 4, 1, 5, 6, 2]
    sam = StaticSAM.from_tokens(corpus, 10)
    state, length = 0, 0
    for t in [3, 3, 5, 6]:  # context "... 5 6"
        state, length = sam.transfer(state, length, t)
    assert length == 2 and int(sam.count[state]) == 3
    s7, l7 = sam.transfer(state, length, 7)  # root 7: "5 6 7" twice, first at 0..2
    assert l7 == 3 and sam.continuation(s7, 4) == [8, 9, 5, 6]
    assert sam.top_children(state, 8) == [(7, s7), (2, sam.child(state, 2))]  # 7 twice, 2 once
    assert sam.transfer(s7, l7, 1) == (sam.child(0, 1), 1)  # "5 6 7 1", "6 7 1", "7 1" never occur: "1" does
    assert sam.contains([7, 4, 1, 5]) and not sam.contains([7, 4, 2])


def test_frequency_tree_caps_children_and_depth() -> None:
    # after the root 0: 1 followed by 3 distinct tokens (10, 11, 12), 2 once
    corpus = [0, 1, 10, 0, 1, 11, 0, 1, 12, 0, 2, 13]
    sam = StaticSAM.from_tokens(corpus, 14)
    state, _ = sam.transfer(0, 0, 0)
    full = frequency_tree(sam, state, 0, 40, 8, 10)
    assert full.tokens[:2] == (1, 2) and full.parents[:2] == (-1, -1)  # 1 (3/4) before 2 (1/4)
    children = lambda node: {t for t, p in zip(full.tokens, full.parents) if p == node}  # noqa: E731
    assert children(0) == {10, 11, 12} and children(1) == {13}  # each 1/4 of the root's occurrences
    capped = frequency_tree(sam, state, 0, 40, 2, 10)  # top_k 2: two children per node, two nodes per depth
    assert capped.depths().count(1) == 2 and capped.depths().count(2) == 2
    assert max(frequency_tree(sam, state, 0, 40, 8, 1).depths()) == 1
    assert frequency_tree(sam, state, 0, 2, 8, 10) == DraftTree((1,), (-1,))  # size counts the root
    assert frequency_tree(sam, 0, 0, 1, 8, 10) is None


def test_alone_rule_prefers_the_longer_match() -> None:
    dyn = DynamicSAM()
    dyn.extend_all([4, 5, 6, 7, 8, 9, 4, 5])
    static = StaticSAM.from_tokens([5, 6, 1, 2, 4, 5, 6, 3], 10)
    s = static.transfer(static.transfer(static.transfer(0, 0, 4)[0], 1, 5)[0], 2, 6)  # "4 5 6": length 3
    d = dyn.lookup(6)  # "4 5 6": length 3 too
    assert d[1] == 3 and s[1] == 3
    tree, source = alone_draft(dyn, d, static, s, 6, 40, 4.0, 8, 100)
    assert source == "dynamic" and tree == DraftTree.chain([7, 8, 9, 4, 5])  # ties go to the dynamic match
    assert alone_size(40, 4.0, 3) == 13
    tree, source = alone_draft(dyn, (d[0], 2), static, s, 6, 40, 4.0, 8, 100)
    assert source == "static" and tree.tokens[0] == 3  # "4 5 6" is followed by 3 in the corpus
    tree, _ = alone_draft(dyn, d, None, (0, 0), 6, 40, 1.0, 8, 2)  # alpha 1: 3 tokens, capped at depth 2
    assert tree == DraftTree.chain([7, 8])
    assert alone_draft(dyn, (0, 0), None, (0, 0), 6, 40, 4.0, 8, 100) == (None, "dynamic")


def test_auxiliary_rule_threshold_and_bias() -> None:
    dyn = DynamicSAM()
    dyn.extend_all(list(range(20)) + [0, 1, 2, 3])
    d4 = dyn.lookup(4)  # "0 1 2 3 4": 5 tokens
    static = StaticSAM.from_tokens(list(range(30, 60)), 64)
    s = (0, 0)
    for t in range(30, 40):
        s = static.transfer(*s, t)  # a 10-token static match
    chain, source = retrieval_chain(dyn, d4, static, (0, 0), 40, 5, 5, 100)
    assert source == "dynamic" and chain[:3] == [5, 6, 7]
    assert retrieval_chain(dyn, (d4[0], 4), static, (0, 0), 40, 5, 5, 100) == (None, "auxiliary")
    chain, source = retrieval_chain(dyn, (d4[0], 4), static, s, 40, 5, 5, 100)  # 10 - 5 = 5 >= 5 and > 4
    assert source == "static" and chain == list(range(40, 60))
    assert retrieval_chain(dyn, (d4[0], 4), static, (s[0], 9), 40, 5, 5, 100) == (None, "auxiliary")
    assert retrieval_chain(dyn, d4, static, s, 40, 5, 5, 100)[1] == "dynamic"  # 5 >= 10 - 5: the dynamic one
    assert len(retrieval_chain(dyn, d4, None, (0, 0), 40, 5, 5, 3)[0]) == 3  # max_depth


def test_top_children_of_a_frequent_token_equal_a_full_sort() -> None:
    """The partition shortcut for states with many continuations keeps the full sort's order (ties by token id)."""
    rng = np.random.default_rng(3)
    corpus = []
    for _ in range(600):
        corpus += [0, int(rng.integers(1, 60)) if rng.random() < 0.7 else int(rng.integers(1, 5))]
    sam = StaticSAM.from_tokens(corpus, 64)
    state = sam.child(0, 0)
    lo, hi = int(sam.edge_off[state]), int(sam.edge_off[state + 1])
    assert hi - lo > 32
    full = sorted(zip(sam.edge_tok[lo:hi].tolist(), sam.edge_dst[lo:hi].tolist()), key=lambda e: (-int(sam.count[e[1]]), e[0]))
    for k in (1, 3, 8):
        assert sam.top_children(state, k) == full[:k]


def test_doctests() -> None:
    """The worked examples in the docstrings are checked, not only read."""
    import doctest
    import importlib

    for name in ("draft", "method", "dyn_sam", "static_sam", "static_build", "store"):
        mod = importlib.import_module(f"specbench_methods.samd.{name}")
        result = doctest.testmod(mod)
        assert result.failed == 0 and result.attempted > 0, mod.__name__
