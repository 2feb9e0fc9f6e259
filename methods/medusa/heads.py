"""Medusa-1 heads: per head, residual blocks on the target's last hidden state, then an LM head.

``x_k = h + SiLU(W_k h + b_k)`` (repeated ``num_layers`` times; ``W_k`` starts at zero, so an untrained head
reads the hidden state as is), ``logits_k = LMHead_k(x_k)``. With ``own_lm_head=False`` every head uses
the target's own output head, run once over the stacked rows of all heads: on CPU that costs about one
LM-head read per step instead of K. Head k predicts the token k + 1 positions after the root (t + k + 2).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from specbench.api import frozen_rows, pack_for_inference


class ResBlock(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.linear(x))


class MedusaHeads(nn.Module):
    """``forward(hidden [B, h]) -> logits [B, K, V]``. ``lm_head`` is the target's when shared (not owned)."""

    def __init__(self, hidden: int, vocab: int, num_heads: int, num_layers: int, lm_head: nn.Module | None = None) -> None:
        super().__init__()
        self.num_heads, self.num_layers = num_heads, num_layers
        self.blocks = nn.ModuleList(nn.Sequential(*[ResBlock(hidden) for _ in range(num_layers)]) for _ in range(num_heads))
        self.own_heads = nn.ModuleList(nn.Linear(hidden, vocab, bias=False) for _ in range(num_heads)) if lm_head is None else None
        self._shared = [lm_head]  # a list: the target's head is not a submodule (not saved, not trained)
        # the target ids of the logits' columns after ``restrict`` (None: all, in order); a buffer: it moves with .to()
        self.register_buffer("ids", None, persistent=False)

    def restrict(self, ids: torch.Tensor) -> None:
        """Score only the target ids ``ids`` (FR-Spec's ``vocab=fr:N``): each head keeps its rows for them, so a
        step multiplies by ``len(ids)`` rows instead of V; ``forward``'s column j is then target id ``ids[j]``."""
        ids = ids.to(torch.long)
        if self.own_heads is not None:
            self.own_heads = nn.ModuleList(frozen_rows(head, ids) for head in self.own_heads)
        else:
            holder = nn.Sequential(frozen_rows(self._shared[0], ids))  # (packed like the target's head it replaces)
            pack_for_inference(holder)
            self._shared = [holder[0]]
        self.ids = ids.to(next(self.blocks.parameters()).device)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        feats = [blocks(hidden) for blocks in self.blocks]  # K x [B, h]
        if self.own_heads is not None:
            return torch.stack([head(f) for head, f in zip(self.own_heads, feats)], dim=1)
        head = self._shared[0]
        stacked = torch.stack(feats, dim=1)  # [B, K, h]
        b, k, h = stacked.shape
        flat = stacked.reshape(b * k, h).to(head.weight.dtype)
        # training needs autograd through the frozen head: the plain weight, not a packed inference kernel
        out = F.linear(flat, head.weight.detach()) if self.training else head(flat)
        return out.float().reshape(b, k, -1)
