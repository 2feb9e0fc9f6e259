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


def beam_search(step: StepFn, root: int, width: int, length: int, device: torch.device | str = "cpu",
                token_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Return beams ``[W', L]`` (column 0 is the root) and their summed log-probs ``[W']``, best first.

    ``W' = min(W, V)``. With ``token_ids`` (a reduced draft vocabulary) the step's log-probs are over
    those ids: column j is target token ``token_ids[j]``; beams and step inputs stay target ids. Step functions that mask tokens to -inf (``warped_log_probs``) need
    ``W <= top_k`` so that no masked candidate is drawn (``ReDrafter`` clamps W to it).
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
        if token_ids is not None:
            tok = token_ids[tok]
        beams = torch.cat([beams[src], tok.unsqueeze(1)], dim=1)
        scores = top
        state = state[src]
    return beams, scores


def warped_log_probs(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """Log-softmax over each row's ``top_k`` largest logits (ties with the k-th kept), the rest -inf.

    The reference scores beams this way (top-50): a beam whose next-token distribution is flat over
    many tokens is judged only against its own best k, so it competes better with peaked beams.
    ``top_k = 0`` (or >= V) is the plain log-softmax.

    >>> warped_log_probs(torch.tensor([[2.0, 1.0, 0.0]]), 2).exp()
    tensor([[0.7311, 0.2689, 0.0000]])
    """
    logits = logits.float()
    if 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def head_step_fn(head: torch.nn.Module, context: torch.Tensor, top_k: int = 0) -> StepFn:
    """Bind a ``DraftHead`` to one step's context hidden state ``[h]`` as a beam-search step function."""
    ctx = context.to(head.lm_head.weight.dtype).unsqueeze(0)  # [1, h]

    def step(state: torch.Tensor | None, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        new_state, logits = head.step(ctx.expand(tokens.shape[0], -1), state, tokens)
        return new_state, warped_log_probs(logits, top_k)

    return step
