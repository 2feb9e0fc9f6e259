"""Beam search over the draft head: width W, length L (L counts the root g0), summed log-probs.

The paper starts W copies of ``[g0]`` with scores ``[0, -inf, ..., -inf]`` so the first expansion
draws all W candidates from one beam; here the first step runs one row and takes its top W, which
is the same result without scoring W identical rows. No length normalisation (all beams have equal
length). Example (W=2, L=3, root 7): ``[[7, 4, 1], [7, 4, 9]]`` if ``7 4`` dominates both steps.
"""
from __future__ import annotations

from typing import Callable

import torch

# (state [B, ...] or None, last tokens [B]) -> (new state [B, ...], log-probs [B, V])
StepFn = Callable[[torch.Tensor | None, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def beam_search(step: StepFn, root: int, width: int, length: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Return beams ``[W', L]`` (column 0 is the root) and their summed log-probs ``[W']``, best first.

    ``W' = min(W, number of finite candidates)`` is W in practice (V >= W).
    """
    beams = torch.tensor([[root]], dtype=torch.long, device=device)  # [1, 1]
    scores = torch.zeros(1, device=device)  # [1]
    state: torch.Tensor | None = None
    for _ in range(length - 1):
        state, logp = step(state, beams[:, -1])  # [B, h], [B, V]
        vocab = logp.shape[-1]
        cand = (scores.unsqueeze(1) + logp.float()).reshape(-1)  # [B * V]
        k = min(width, cand.numel())
        top, idx = torch.topk(cand, k)
        src = torch.div(idx, vocab, rounding_mode="floor")  # [k] beam each candidate extends
        tok = idx % vocab  # [k]
        beams = torch.cat([beams[src], tok.unsqueeze(1)], dim=1)
        scores = top
        state = state[src]
    return beams, scores


def head_step_fn(head: torch.nn.Module, context: torch.Tensor) -> StepFn:
    """Bind a ``DraftHead`` to one step's context hidden state ``[h]`` as a beam-search step function."""
    ctx = context.to(head.lm_head.weight.dtype).unsqueeze(0)  # [1, h]

    def step(state: torch.Tensor | None, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        new_state, logits = head.step(ctx.expand(tokens.shape[0], -1), state, tokens)
        return new_state, torch.log_softmax(logits.float(), dim=-1)

    return step
