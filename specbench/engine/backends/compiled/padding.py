"""One step's inputs padded to its row bucket: token ids, positions and which cache columns each row sees.

The ``n`` real rows see the context ``[0, n_ctx)`` and their ancestors among the step's rows (``ancestors``
[n, n], a chain's: the lower triangle), written at columns ``n_ctx .. n_ctx + n - 1``. A padding row (token 0,
at position ``n_ctx``) sees its own column alone, so its softmax is defined and nothing real reads it.

>>> step = pad_step(torch.tensor([[7, 8, 9]]), n_ctx=2, capacity=8, buckets=(1, 4))
>>> step.ids.tolist(), step.positions.tolist()
([[7, 8, 9, 0]], [[2, 3, 4, 2]])
>>> step.allowed.int().tolist()
[[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 1, 0, 0]]

A tree ``root -> a, root -> b`` (rows 0, 1, 2; offsets 0, 1, 1) after one cached position:

>>> tree = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
>>> step = pad_step(torch.tensor([[5, 6, 7]]), 1, 8, (4,), torch.tensor([0, 1, 1]), tree)
>>> step.positions.tolist(), step.allowed.int().tolist()[2]
([[1, 2, 2, 1]], [1, 1, 0, 1, 0, 0, 0, 0])
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench.engine.backends.compiled.buckets import row_bucket


@dataclass(frozen=True)
class PaddedStep:
    """A step's forward inputs at its bucket ``b``: ``ids`` [1, b], ``positions`` [1, b], ``allowed`` [b, capacity]."""

    ids: torch.Tensor
    positions: torch.Tensor
    allowed: torch.Tensor

    @property
    def bucket(self) -> int:
        return int(self.ids.shape[1])


def pad_step(ids: torch.Tensor, n_ctx: int, capacity: int, buckets: tuple[int, ...],
             offsets: torch.Tensor | None = None, ancestors: torch.Tensor | None = None) -> PaddedStep:
    """``ids`` [1, n] after ``n_ctx`` cached positions, padded to ``row_bucket(n)`` (module docstring);
    ``offsets`` [n]: each row's depth (default ``0..n-1``), ``ancestors`` [n, n] bool (default a chain)."""
    n, device = int(ids.shape[1]), ids.device
    b = row_bucket(n, buckets)
    padded = torch.zeros(1, b, dtype=ids.dtype, device=device)
    padded[:, :n] = ids
    own = torch.arange(b, device=device)
    positions = torch.full((b,), n_ctx, dtype=torch.long, device=device)
    positions[:n] = n_ctx + (offsets if offsets is not None else own[:n])
    allowed = torch.zeros(b, capacity, dtype=torch.bool, device=device)  # [b, capacity]
    allowed[:n, :n_ctx] = True
    allowed[:n, n_ctx:n_ctx + n] = ancestors if ancestors is not None else torch.ones(n, n, dtype=torch.bool,
                                                                                        device=device).tril()
    allowed[own[n:], n_ctx + own[n:]] = True
    return PaddedStep(padded, positions[None], allowed)
