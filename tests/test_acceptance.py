"""Greedy acceptance on constructed logits (+100 on the wanted token), no model."""
import torch

from specbench.engine.tree import DraftTree, compile_tree
from specbench.engine.verify import accept_greedy

V = 16


def logits_wanting(tokens: list[int]) -> torch.Tensor:
    out = torch.zeros(len(tokens), V)
    for row, tok in enumerate(tokens):
        out[row, tok] = 100.0
    return out


def test_accepts_longest_matching_branch():
    tree = DraftTree.from_chains([[3, 4, 5], [3, 6], [7]])  # rows 1:3 2:4 3:5 4:6 5:7
    c = compile_tree(1, tree, torch.device("cpu"))
    # root wants 3, row1 wants 6 (branch 2), row4 wants 9 (bonus)
    logits = logits_wanting([3, 6, 0, 0, 9, 0])
    v = accept_greedy(c, logits, torch.zeros(6, 2))
    assert v.rows == [0, 1, 4]
    assert v.accepted == [3, 6]
    assert v.bonus == 9


def test_rejects_everything():
    c = compile_tree(1, DraftTree.chain([2, 3]), torch.device("cpu"))
    v = accept_greedy(c, logits_wanting([5, 3, 4]), torch.zeros(3, 2))
    assert v.rows == [0] and v.accepted == [] and v.bonus == 5


def test_accepts_whole_chain_plus_bonus():
    c = compile_tree(1, DraftTree.chain([2, 3]), torch.device("cpu"))
    v = accept_greedy(c, logits_wanting([2, 3, 11]), torch.zeros(3, 2))
    assert v.accepted == [2, 3] and v.bonus == 11 and v.rows == [0, 1, 2]
