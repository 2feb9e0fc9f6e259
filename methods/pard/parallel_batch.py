"""PARD's training layout: one sequence laid out as K copies so a draft learns to predict K tokens in one forward.

PARD (AMD-AIG-AIMA/PARD, ``pard/pard_train.py`` at 5dfe809) trains a small LM so that ``[x_0 .. x_p, m, .., m]``
(``K - 1`` mask tokens ``m`` after the last real token) gives, at its last K rows, the tokens ``x_{p+1} ..
x_{p+K}``. One training sequence of ``S`` tokens becomes K copies of it, all at positions ``0..S-1``:

- copy 0: the real tokens, causal, each row predicting the next token (as ordinary training);
- copy ``i >= 1``: mask tokens; row ``(i, t)`` sees the real tokens ``x_0 .. x_{t-i}`` and, of each copy
  ``j = 1..i``, the row at position ``t - i + j``: exactly the input ``x_0 .. x_{t-i}, m (i times)`` at positions
  ``0..t``, as at decode time. It predicts ``x_{t+1}``, the token ``i + 1`` steps after its last real token.

Rows with no real token to see (``t < i``) are dropped (the reference masks their labels). Conditional drop (COD,
the reference's ``down_sample_ration`` 0.7 and ``down_sample_ration_min`` 0.2) keeps of copy ``i`` only
``int(S * max(0.7^i, 0.2))`` rows, drawn among the positions one after a kept row of copy ``i - 1``, so every row
kept has all the rows it attends to.

Example: S = 3, K = 2, no drop: rows (0,0) (0,1) (0,2) (1,1) (1,2); row (1,2) holds a mask at position 2, sees
(0,0) (0,1) (1,2), and predicts x_3.

>>> lay = parallel_layout(3, 2)
>>> lay.copy.tolist(), lay.position.tolist()
([0, 0, 0, 1, 1], [0, 1, 2, 1, 2])
>>> lay.visible.int().tolist()[4]
[1, 1, 0, 0, 1]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

COD_RATIO = 0.7  # the reference's down_sample_ration (example configs)
COD_MIN = 0.2  # its down_sample_ration_min


@dataclass(frozen=True)
class ParallelLayout:
    """The rows of one laid-out sequence: which copy and position each is, and who sees whom."""

    copy: torch.Tensor  # [n] long: 0 = the real token, i >= 1 = a mask i steps ahead of its last real token
    position: torch.Tensor  # [n] long: the row's position id (the same for every copy of a position)
    visible: torch.Tensor  # [n, n] bool: row r attends to row c

    def inputs(self, ids: torch.Tensor, mask_id: int) -> torch.Tensor:
        """The rows' input ids: copy 0 the sequence's tokens ``ids`` [S], the other copies ``mask_id``."""
        out = ids[self.position].clone()
        out[self.copy > 0] = mask_id
        return out

    def targets(self, ids: torch.Tensor, first: torch.Tensor | None = None, ignore: int = -100) -> torch.Tensor:
        """Each row's label: the token after its position, ``ids[t + 1]`` (``ignore`` past the end); copy 0's rows
        take ``first[t]`` instead when given (a teacher's next token, e.g. the target's greedy label)."""
        nxt = torch.full_like(ids, ignore)
        nxt[:-1] = ids[1:]
        out = nxt[self.position].clone()
        if first is not None:
            zero = self.copy == 0
            out[zero] = first[self.position[zero]]
        return out


def kept_positions(length: int, copies: int, rng: np.random.Generator | None = None, ratio: float = COD_RATIO,
                   floor: float = COD_MIN) -> list[np.ndarray]:
    """Per copy, the positions kept: every one for copy 0; COD's chained random subset for the others (``rng``
    None: no drop, every position ``t >= i``)."""
    kept = [np.arange(length)]
    for i in range(1, copies):
        allowed = kept[-1] + 1
        allowed = allowed[allowed < length]
        if rng is not None:
            n = min(len(allowed), int(length * max(ratio ** i, floor)))
            allowed = np.sort(rng.choice(allowed, n, replace=False)) if n else allowed[:0]
        kept.append(allowed)
    return kept


def parallel_layout(length: int, copies: int, rng: np.random.Generator | None = None) -> ParallelLayout:
    """The layout of a sequence of ``length`` tokens in ``copies`` copies (module docstring); ``rng``: COD."""
    kept = kept_positions(length, copies, rng)
    copy = torch.cat([torch.full((len(p),), i, dtype=torch.long) for i, p in enumerate(kept)])
    position = torch.cat([torch.as_tensor(p, dtype=torch.long) for p in kept])
    cr, pr = copy[:, None], position[:, None]
    cc, pc = copy[None, :], position[None, :]
    real = (cc == 0) & (pc <= pr - cr)  # the real tokens up to the row's last one
    masks = (cc >= 1) & (cc <= cr) & (pc == pr - cr + cc)  # one mask of each earlier copy, on the row's diagonal
    return ParallelLayout(copy, position, real | masks)
