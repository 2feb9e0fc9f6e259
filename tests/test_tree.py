"""DraftTree construction and compilation (no model)."""
import pytest
import torch

from specbench.engine.tree import DraftTree, compile_tree


def test_chain_and_trie_merge():
    t = DraftTree.chain([4, 2, 3])
    assert t.tokens == (4, 2, 3) and t.parents == (-1, 0, 1) and t.is_chain
    m = DraftTree.from_chains([[5, 6, 7], [5, 8], [9]])
    assert m.tokens == (5, 6, 7, 8, 9)
    assert m.parents == (-1, 0, 1, 0, -1)
    assert not m.is_chain
    assert m.path_to(2) == [5, 6, 7] and m.path_to(3) == [5, 8]
    assert m.depths() == [1, 2, 3, 2, 1]


def test_depths_and_ranks_computed_once_stay_the_trees_own():
    # (cached per tree: a caller that edits the list it got must not change what the tree answers next)
    m = DraftTree.from_chains([[5, 6, 7], [5, 8], [9]])
    got, ranks = m.depths(), m.sibling_ranks()
    got.append(99), ranks.append(99)
    got[0] = ranks[0] = 7
    assert m.depths() == [1, 2, 3, 2, 1] and m.depth == 3
    assert m.sibling_ranks() == [0, 0, 0, 1, 1]
    assert m.subtree([0, 3]).depths() == [1, 2] and m.subtree([0, 3]).sibling_ranks() == [0, 1]


def test_invalid_parent_rejected():
    with pytest.raises(ValueError):
        DraftTree((1, 2), (-1, 1))
    with pytest.raises(ValueError):
        DraftTree((1,), (-1, 0))


def test_truncated_keeps_valid_parents():
    m = DraftTree.from_chains([[5, 6, 7], [5, 8], [9]])
    t = m.truncated(1)
    assert t.tokens == (5, 9) and t.parents == (-1, -1)
    t2 = m.truncated(2, max_nodes=3)
    assert t2.tokens == (5, 6, 8) and t2.parents == (-1, 0, 0)
    assert m.truncated(10) is m


def test_compile_tree_mask_and_depths():
    m = DraftTree.from_chains([[5, 6], [5, 8], [9]])  # rows: 0 root, 1:5, 2:6, 3:8, 4:9
    c = compile_tree(7, m, torch.device("cpu"))
    assert c.input_ids.tolist() == [[7, 5, 6, 8, 9]]
    assert c.position_offsets.tolist() == [0, 1, 2, 2, 1]
    expected = [
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [1, 1, 1, 0, 0],
        [1, 1, 0, 1, 0],
        [1, 0, 0, 0, 1],
    ]
    assert c.ancestor_mask.int().tolist() == expected
    assert c.children[0] == {5: 1, 9: 4} and c.children[1] == {6: 2, 8: 3}


def test_compile_chain_needs_no_mask():
    c = compile_tree(1, DraftTree.chain([2, 3]), torch.device("cpu"))
    assert c.ancestor_mask is None and c.position_offsets is None
    c0 = compile_tree(1, None, torch.device("cpu"))
    assert c0.input_ids.tolist() == [[1]]
