"""REST's reference pruning (``cut_to_choices``): hand-worked examples, dict vs numpy trie, options."""
from __future__ import annotations

import numpy as np
import pytest

from specbench_methods.rest import RESTConfig, first_paths, rest_tree
from specbench.datastore.trie import cut_to_choices, top_nodes_dict, top_nodes_vectorised
from specbench.engine.tree import DraftTree
from tests.test_rest import brute_top


def reference_cut(ranked: list[tuple[int, ...]], c: int) -> set[tuple[int, ...]]:
    """The reference rule on a ranked list of paths: drop the costliest (distinct tokens) while sum > c."""
    total = sum(len(set(p)) for p in ranked)
    order = sorted(range(len(ranked)), key=lambda i: (-len(set(ranked[i])), -i))
    dropped = set()
    for i in order:
        if total <= c:
            break
        total -= len(set(ranked[i]))
        dropped.add(i)
    kept = [p for i, p in enumerate(ranked) if i not in dropped]
    return {p[:j] for p in kept for j in range(1, len(p) + 1)}


def paths_of(tree: DraftTree) -> set[tuple[int, ...]]:
    return {tuple(tree.path_to(i)) for i in range(len(tree))}


def test_hand_worked_example() -> None:
    # rank order 1, 1>2, 1>2>3, 1>5, 7: costs 1+2+3+2+1 = 9 > 6 -> drop 1>2>3 (cost 3), 6 <= 6 stop
    tree = DraftTree((1, 2, 3, 5, 7), (-1, 0, 1, 0, -1))
    assert cut_to_choices(tree, 6) == DraftTree((1, 2, 5, 7), (-1, 0, 0, -1))
    # c = 3: then 1>5 (cost 2, lower rank than 1>2) goes too: 4 -> still > 3, then 1>2: 2 <= 3
    assert cut_to_choices(tree, 3) == DraftTree((1, 7), (-1, -1))
    assert cut_to_choices(tree, 9) == tree  # within budget: unchanged


def test_cost_counts_distinct_tokens_not_depth() -> None:
    # 9, 9>9, 9>9>9, 4, 4>6: costs 1+1+1+1+2 = 6 > 4 -> only 4>6 goes; the 9-chain (depth 3) stays,
    # where counting depth (1+2+3+1+2 = 9) would have dropped 9>9>9 first
    tree = DraftTree((9, 9, 9, 4, 6), (-1, 0, 1, -1, 3))
    assert cut_to_choices(tree, 4) == DraftTree((9, 9, 9, 4), (-1, 0, 1, -1))


@pytest.mark.parametrize("seed", range(30))
def test_cut_same_on_dict_and_numpy_trie_and_matches_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 400)), int(rng.integers(1, 8))
    conts = rng.integers(0, 4, size=(n, m))
    c = int(rng.integers(1, 40))
    ranked = brute_top(conts.tolist(), c)
    cut_dict = cut_to_choices(top_nodes_dict(conts.tolist(), c), c)
    cut_np = cut_to_choices(top_nodes_vectorised(conts, c), c)
    assert cut_dict == cut_np
    assert paths_of(cut_dict) == reference_cut(ranked, c)
    assert len(cut_dict) <= c


class _FakeDS:
    def __init__(self, conts: list[list[int]]) -> None:
        self.conts = np.asarray(conts)

    def longest_suffix_match(self, context, n_max, n_min) -> int:
        return n_min

    def continuations(self, query, k, m):
        return self.conts[:k, :m]


def test_rest_tree_cut_option() -> None:
    ds = _FakeDS([[1, 2, 3], [1, 2, 3], [1, 2, 4], [1, 5, 6], [7, 8, 9]])
    uncut = rest_tree(ds, [0, 0], RESTConfig(c=8, cut=False))
    cut = rest_tree(ds, [0, 0], RESTConfig(c=8))
    assert len(uncut) == 8 and paths_of(cut) < paths_of(uncut)
    assert sum(len(set(p)) for p in paths_of(cut)) <= 8


def test_first_paths() -> None:
    tree = DraftTree((1, 2, 3, 5, 7), (-1, 0, 1, 0, -1))  # leaves: 3 (path 1>2>3), 5, 7
    assert first_paths(tree, 2, 0) == DraftTree((1, 2, 3, 5), (-1, 0, 1, 0))
    assert first_paths(tree, 0, 2) == DraftTree((1, 2, 5, 7), (-1, 0, 0, -1))
    assert first_paths(tree, 1, 1) == DraftTree((1,), (-1,))


def test_bad_path_options_rejected() -> None:
    from specbench.errors import ConfigError

    with pytest.raises(ConfigError):
        RESTConfig(max_paths=-1).validate()
