"""Training-time test (EAGLE-3): the draft is trained on its own unrolled predictions, as it drafts.

A window holds the rows of ``w`` consecutive positions of one sequence. Step 0 is EAGLE's teacher-forced
pass: row ``p`` reads the fused target feature at ``p`` and token ``p + 1``, attends causally to the
window's rows, and predicts token ``p + 2``. Step ``j >= 1`` feeds each row its OWN output of step
``j - 1`` as the feature, with token ``p + 1 + j`` (the text's) at position ``p + j``, and predicts token
``p + 2 + j``: exactly the input a tree node ``j`` levels below the root gets when drafting. Its query
sees the step-0 keys up to ``p`` (the context) and its own keys of steps ``1..j`` (its ancestors):
one extra key per step on the diagonal, not a new ``w x w`` block.

Example (one window, positions 0..3, 2 steps): at step 1 row 2 reads ``(g_2 from step 0, t_4)`` at position
3, attends to step-0 keys of rows 0, 1, 2 and its own step-1 key, and is scored against the target's
distribution at position 4 (its prediction of ``t_5``).

The loss of step ``j`` is the cross-entropy against the target's distribution restricted to the draft
vocabulary (rows whose target argmax has no draft id are left out), weighted ``decay ** j`` as the
reference's ``0.8 ** j``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from specbench_methods.eagle3.layer import Eagle3Layer


class UnrolledKeys:
    """The attention of an unroll: step 0 over the window (``mask [B, w, w]`` bool, True = may attend),
    each later step adds its rows' own keys on the diagonal. Called once per step with that step's
    ``q [B, H, w, d]``, ``k``, ``v [B, KV, w, d]``; returns ``[B, H, w, d]``."""

    def __init__(self, mask: torch.Tensor) -> None:
        self.mask = mask[:, None]  # [B, 1, w, w]
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        rep = q.shape[1] // k.shape[1]  # query heads per KV head (head i reads KV head i // rep)
        self.k.append(k.repeat_interleave(rep, 1).float())
        self.v.append(v.repeat_interleave(rep, 1).float())
        qf, scale, w = q.float(), 1.0 / math.sqrt(q.shape[-1]), q.shape[-2]
        context = (qf @ self.k[0].transpose(-1, -2) * scale).masked_fill(~self.mask, float("-inf"))  # [B, H, w, w]
        own = [((qf * kt).sum(-1) * scale)[..., None] for kt in self.k[1:]]  # [B, H, w, 1] per later step
        p = torch.softmax(torch.cat([context, *own], -1), -1)
        out = p[..., :w] @ self.v[0]
        for t, vt in enumerate(self.v[1:]):
            out = out + p[..., w + t, None] * vt
        return out.to(q.dtype)


@dataclass
class Windows:
    """A batch of ``B`` windows padded to ``w`` rows, for ``steps`` unrolled steps.

    ``layer_states [B, w, 3, H_t]``: the fused feature's inputs at the rows; ``tokens [B, w + steps - 1]``:
    the text's tokens at ``p + 1`` onwards (step ``j`` reads ``tokens[:, j:j + w]``); ``teacher [B, w + steps - 1, H]``:
    the target's final states at the same positions (step ``j`` is scored against ``teacher[:, j:j + w]``) and
    ``labels`` their argmax; ``rows [B, w]`` bool: real rows (not padding).
    """

    layer_states: torch.Tensor
    tokens: torch.Tensor
    teacher: torch.Tensor
    labels: torch.Tensor
    rows: torch.Tensor

    def causal_mask(self) -> torch.Tensor:
        """``[B, w, w]``: causal over real rows; a padding row sees itself (no empty softmax)."""
        w = self.rows.shape[1]
        causal = torch.ones(w, w, dtype=torch.bool, device=self.rows.device).tril()
        return (causal & self.rows[:, None, :]) | torch.eye(w, dtype=torch.bool, device=self.rows.device)


def unroll(layer: Eagle3Layer, batch: Windows, steps: int) -> list[torch.Tensor]:
    """The draft's outputs ``[B, w, h]`` at each of ``steps`` unrolled steps (step 0 teacher-forced)."""
    w = batch.rows.shape[1]
    positions = torch.arange(w, device=batch.rows.device)
    attend = UnrolledKeys(batch.causal_mask())
    feats = layer.fuse(batch.layer_states)
    outs = []
    for j in range(steps):
        feats = layer.step(feats, batch.tokens[:, j : j + w], positions + j, attend)
        outs.append(feats)
    return outs


def ttt_loss(layer: Eagle3Layer, batch: Windows, steps: int, head_w: torch.Tensor, decay: float,
             ) -> tuple[torch.Tensor, list[int], int]:
    """(weighted loss, per step the rows whose draft top-1 is the target's argmax, real rows).

    ``head_w [N, H]``: the target's output-head rows of the draft vocabulary (its distribution over them
    is the teacher's).
    """
    w, rows = batch.rows.shape[1], batch.rows
    n_rows = int(rows.sum())
    with torch.no_grad(), torch.autocast(rows.device.type, enabled=False):  # the teacher in fp32 under mixed precision
        teacher = F.softmax(batch.teacher.float() @ head_w.T, -1)  # [B, w + steps - 1, N]
        in_vocab = layer.t2d[batch.labels]  # [B, w + steps - 1]: the target's choice has a draft id
    total = torch.zeros((), device=rows.device)
    hits: list[int] = []
    for j, out in enumerate(unroll(layer, batch, steps)):
        logp = F.log_softmax(layer.logits(out).float(), -1)  # [B, w, N]
        scored = rows & in_vocab[:, j : j + w]
        ce = -(teacher[:, j : j + w] * logp).sum(-1)  # [B, w]
        total = total + decay ** j * (ce * scored).sum() / max(n_rows, 1)
        with torch.no_grad():
            guess = layer.to_target(logp.argmax(-1))
            hits.append(int(((guess == batch.labels[:, j : j + w]) & rows).sum()))
    return total, hits, n_rows
