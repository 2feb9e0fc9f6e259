"""The EAGLE draft network (Li et al. 2024): one decoder layer that predicts the target's next feature.

Row i reads the target's feature ``f_i`` (final-norm hidden state at position i) and the embedding of
token ``i + 1``: ``x_i = fc([embed(t_{i+1}), f_i])``, then a Llama-style decoder layer (attention with RoPE
over the draft's own cache, SwiGLU MLP; no input norm, as in the reference's first layer) gives
``f^_{i+1}``, and the target's output head turns it into the distribution of token ``i + 2``. Drafting
then feeds predicted features back in (``[embed(d1), f^_{i+1}] -> f^_{i+2}`` ...).

Parameter names follow the reference's checkpoints (``fc``, ``layers.0.self_attn.q_proj``, ...), so a
published EAGLE-1/2 state dict loads as it is. Example: for SmolLM2-135M (hidden 576, 9 heads, 3 KV
heads, MLP 1536) the layer and ``fc`` hold 4.3M parameters, 3% of the target.
"""
from __future__ import annotations

import torch
from torch import nn

from specbench.api import PREFILL_ROWS, Attention, DecoderLayer, DraftCache, LayerShape, RMSNorm, causal_chunks

__all__ = ["PREFILL_ROWS", "Attention", "DecoderLayer", "DraftCache", "EagleLayer", "LayerShape", "RMSNorm",
           "causal_chunks"]  # (the shared pieces live in the core's drafting kit; EAGLE's files import them here)


class EagleLayer(nn.Module):
    """``forward(features [n, h], next_tokens [n], positions [n], mask [n, L], cache) -> features [n, h]``.

    ``embed`` is the target's input embedding (frozen, not saved).
    """

    def __init__(self, shape: LayerShape, embed: nn.Module, fc_bias: bool = True) -> None:
        super().__init__()
        self.shape = shape
        self.fc = nn.Linear(2 * shape.hidden, shape.hidden, bias=fc_bias)
        self.layers = nn.ModuleList([DecoderLayer(shape)])
        self._embed = [embed]  # a list: the target's embedding is not a submodule (not saved, not trained)

    def forward(self, features: torch.Tensor, next_tokens: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor,
                cache: DraftCache | None = None) -> torch.Tensor:
        with torch.no_grad():  # the target's embedding is frozen (and may be tied to its output head)
            emb = self._embed[0](next_tokens).to(features.dtype)
        x = self.fc(torch.cat([emb, features], -1))
        for layer in self.layers:
            x = layer(x, positions, mask, cache)
        return x

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())
