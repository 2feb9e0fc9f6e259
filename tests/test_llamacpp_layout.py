"""The engine's attention mask as llama.cpp sequence ids (``engine/backends/llamacpp/seq_layout.py``): what llama.cpp
would let each row see under the layout equals the engine's 4D mask, on trees, chains, Lookahead's auxiliary
rows and both together; masks it cannot express fail in one line. Pure numpy: no llama.cpp needed."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from specbench_methods.lookahead.window import JacobiWindow
from specbench.engine.aux_rows import AuxRows, append_aux
from specbench.engine.backends.llamacpp.seq_layout import LayoutError, implied_mask, layout_sequences
from specbench.engine.tree import DraftTree, compile_tree
from test_engine_exact import random_tree

CPU = torch.device("cpu")


def _mask_and_offsets(compiled) -> tuple[np.ndarray, np.ndarray]:
    n = compiled.input_ids.shape[1]
    if compiled.ancestor_mask is None:  # a chain: plain causal order
        return np.tril(np.ones((n, n), dtype=bool)), np.arange(n)
    return compiled.ancestor_mask.numpy(), compiled.position_offsets.numpy()


def _check(mask: np.ndarray, offsets: np.ndarray, max_seqs: int = 256):
    layout = layout_sequences(mask, offsets, max_seqs)
    np.testing.assert_array_equal(implied_mask(layout, offsets), mask)
    # llama.cpp's batch rules: rows in non-decreasing position order, each sequence's positions contiguous from 0
    assert (np.diff(offsets[layout.order]) >= 0).all()
    for s in range(layout.n_seqs):
        held = sorted({int(offsets[j]) for j, seqs in enumerate(layout.seq_ids) if s in seqs})
        assert held == list(range(len(held)))
    return layout


def test_worked_example_from_the_docstring() -> None:
    tree = DraftTree((11, 12, 13), (-1, 0, -1))  # root -> a -> b, root -> c
    mask, offsets = _mask_and_offsets(compile_tree(10, tree, CPU))
    layout = _check(mask, offsets)
    assert layout.n_seqs == 2
    assert layout.seq_ids == ((0, 1), (0,), (0,), (1,))


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_one_sequence_per_leaf(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        tree = random_tree(rng, 50, max_nodes=40)
        mask, offsets = _mask_and_offsets(compile_tree(7, tree, CPU))
        layout = _check(mask, offsets)
        leaves = len(tree) - len({p for p in tree.parents if p >= 0})
        assert layout.n_seqs == leaves


@pytest.mark.parametrize("levels,window", [(0, 3), (1, 4), (3, 5), (3, 1)])
def test_lookahead_rows_with_and_without_a_tree(levels: int, window: int) -> None:
    rng = random.Random(levels * 10 + window)
    jw = JacobiWindow(window, 5, list(range(30)), rng)
    for _ in range(levels):  # fill the window level by level, as the drafter does
        top = jw.layout()
        jw.advance(1, [rng.randrange(30) for _ in range(len(top))])
    aux = jw.layout()
    for tree in (None, random_tree(rng, 30, max_nodes=15), DraftTree.chain([4, 5, 6])):
        compiled = append_aux(compile_tree(2, tree, CPU), aux)
        mask, offsets = _mask_and_offsets(compiled)
        layout = _check(mask, offsets)
        aux_rows = range(compiled.aux_start, len(offsets))
        assert all(layout.home(r) != layout.home(t) for r in aux_rows for t in range(1, compiled.aux_start))


def test_auxiliary_chain_shares_one_sequence() -> None:
    compiled = append_aux(compile_tree(2, None, CPU), AuxRows.chain([7, 8, 9]))
    mask, offsets = _mask_and_offsets(compiled)
    assert _check(mask, offsets).n_seqs == 1


def test_masks_llama_cpp_cannot_express_fail_in_one_line() -> None:
    offsets = np.array([0, 1, 1])
    late = np.eye(3, dtype=bool)
    late[:, 0] = True
    late[1, 2] = True  # a row seeing another at its own position is fine...
    _check(late, offsets)
    later = np.eye(2, dtype=bool)
    later[0, 1] = True  # ...but not one at a later position
    with pytest.raises(LayoutError, match="later position"):
        layout_sequences(later, np.array([0, 1]), 8)
    gap = np.eye(2, dtype=bool)
    gap[1, 0] = True  # sees the root at 0 from position 2, nothing at 1
    with pytest.raises(LayoutError, match="gap"):
        layout_sequences(gap, np.array([0, 2]), 8)
    tree = DraftTree(tuple(range(6)), (-1,) * 6)  # six leaves
    mask, offsets = _mask_and_offsets(compile_tree(9, tree, CPU))
    with pytest.raises(LayoutError, match="needs 6 llama.cpp sequences, more than the context's 4"):
        layout_sequences(mask, offsets, 4)
    from specbench.errors import USER_ERRORS

    assert issubclass(LayoutError, USER_ERRORS)  # the CLI reports it in one line
