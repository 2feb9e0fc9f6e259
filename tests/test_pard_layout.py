"""PARD's training layout (``methods/pard/parallel_batch.py``): the rows, who sees whom, inputs and labels, COD."""
from __future__ import annotations

import doctest

import numpy as np
import torch

from specbench_methods.pard import parallel_batch
from specbench_methods.pard.parallel_batch import kept_positions, parallel_layout


def _reference_mask(length: int, copies: int) -> torch.Tensor:
    """The reference collator's mask over its flattened copies (row ``i * length + t``), restated from its three
    conditions: a row sees itself; for every ``i``, the row ``i * (length + 1)`` before it; and, for rows of the
    first ``i + 1`` copies, the columns before ``r - i * length - (i - 1)``."""
    n = length * copies
    r = torch.arange(n)[:, None]
    c = torch.arange(n)[None, :]
    seen = c == r
    for i in range(copies):
        seen |= c == r - length * i - i
        seen |= (c < r - i * length - (i - 1)) & (r < (i + 1) * length)
    return seen


def test_layout_equals_the_reference_mask_on_the_rows_it_keeps() -> None:
    for length, copies in ((6, 3), (9, 4), (5, 1)):
        lay = parallel_layout(length, copies)
        flat = lay.copy * length + lay.position
        ref = _reference_mask(length, copies)[flat][:, flat]
        assert torch.equal(lay.visible, ref), (length, copies)
        assert bool((lay.position >= lay.copy).all())  # rows with no real token to see are dropped


def test_each_row_sees_its_real_prefix_then_its_masks() -> None:
    lay = parallel_layout(7, 4)
    for r in range(len(lay.copy)):
        i, t = int(lay.copy[r]), int(lay.position[r])
        seen = sorted((int(lay.copy[c]), int(lay.position[c])) for c in torch.nonzero(lay.visible[r]).flatten())
        assert seen == [(0, s) for s in range(t - i + 1)] + [(j, t - i + j) for j in range(1, i + 1)]
        positions = sorted(int(lay.position[c]) for c in torch.nonzero(lay.visible[r]).flatten())
        assert positions == list(range(t + 1))  # as at decode time: positions 0..t, no gap, no repeat


def test_inputs_and_targets() -> None:
    lay = parallel_layout(4, 3)
    ids = torch.tensor([10, 11, 12, 13])
    assert lay.inputs(ids, 99).tolist() == [10, 11, 12, 13, 99, 99, 99, 99, 99]
    assert lay.position.tolist() == [0, 1, 2, 3, 1, 2, 3, 2, 3]
    assert lay.targets(ids).tolist() == [11, 12, 13, -100, 12, 13, -100, 13, -100]
    teacher = torch.tensor([21, 22, 23, 24])
    assert lay.targets(ids, teacher).tolist() == [21, 22, 23, 24, 12, 13, -100, 13, -100]


def test_cod_keeps_chained_subsets_of_the_reference_sizes() -> None:
    rng = np.random.default_rng(0)
    length, copies = 50, 6
    kept = kept_positions(length, copies, rng)
    assert [len(k) for k in kept] == [50, 35, 24, 17, 12, 10]  # int(50 * max(0.7^i, 0.2))
    for prev, cur in zip(kept, kept[1:]):
        assert set(cur.tolist()) <= set((prev + 1).tolist())  # each kept row's diagonal predecessor is kept
    lay = parallel_layout(length, copies, np.random.default_rng(0))
    counts = lay.visible.sum(1)
    assert torch.equal(counts, lay.position + 1)  # every row still sees its whole input (nothing dropped under it)


def test_doctests() -> None:
    assert doctest.testmod(parallel_batch).failed == 0


def test_a_laid_out_forward_gives_the_decode_time_logits() -> None:
    """Through a real model, row (i, t) of the laid-out forward has the logits of the plain causal forward of
    ``x_0 .. x_{t-i}`` followed by i mask tokens: what the draft is trained on is what it sees when drafting."""
    from conftest import make_tiny_model

    model = make_tiny_model("qwen2", seed=4, layers=2)
    mask_id = 63
    ids = torch.tensor([5, 17, 33, 8, 21, 40])
    lay = parallel_layout(len(ids), 3, np.random.default_rng(1))
    additive = torch.zeros(1, 1, *lay.visible.shape)
    additive[0, 0].masked_fill_(~lay.visible, torch.finfo(torch.float32).min)
    with torch.inference_mode():
        laid = model(input_ids=lay.inputs(ids, mask_id)[None], attention_mask=additive,
                     position_ids=lay.position[None]).logits[0]
        for r in range(len(lay.copy)):
            i, t = int(lay.copy[r]), int(lay.position[r])
            plain = torch.cat([ids[: t - i + 1], torch.full((i,), mask_id)])
            want = model(input_ids=plain[None]).logits[0, -1]
            torch.testing.assert_close(laid[r], want, rtol=1e-4, atol=1e-4)
