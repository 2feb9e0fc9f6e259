"""Hydra++'s prefix layer: one extra decoder layer that reads the target's hidden states of the whole context.

In Hydra++ (the reference's ``prefix-mlp`` head) the heads do not read the target's last hidden state
``h_t`` itself but ``c_t = norm(layer(h_0 .. h_t))_t``: a full Llama decoder layer (input norm, RoPE
attention, post-attention norm, SwiGLU MLP) run over the target's hidden states as if they were input
embeddings, then a final RMSNorm. It keeps its own key/value cache over the context, so each step it reads
only the rows the target produced since the last step (the accepted tokens and the previous root).

Parameter names follow the reference's one-layer ``LlamaModel`` (``layers.0.self_attn.q_proj``, ...,
``norm``), so a published ``prefix_embeding_layer.*`` state dict loads under the prefix ``prefix.``.

Example: SmolLM2-135M (hidden 576, 9 heads, 3 KV heads, MLP 1536): 3.5M parameters; a prompt of 40
tokens then a step that accepted 2 tokens feeds 40 rows, then 3 rows (the old root + 2 accepted).
"""
from __future__ import annotations

import torch
from torch import nn

from specbench.api import MLP, Attention, DraftCache, LayerShape, RMSNorm, causal_chunks


class PrefixDecoderLayer(nn.Module):
    """A pre-norm Llama decoder layer (the reference's ``LlamaDecoderLayer``, unlike EAGLE's it has an input norm)."""

    def __init__(self, s: LayerShape) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(s.hidden, s.eps)
        self.self_attn = Attention(s)
        self.post_attention_layernorm = RMSNorm(s.hidden, s.eps)
        self.mlp = MLP(s)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, cache: DraftCache | None) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), positions, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class PrefixLayer(nn.Module):
    """``forward(hidden [n, h], positions [n], mask [n, L], cache) -> features [n, h]`` (after the final norm).

    ``mask`` is True where a row may attend, over the cache's rows then these ``n`` rows.
    """

    def __init__(self, shape: LayerShape) -> None:
        super().__init__()
        self.shape = shape
        self.layers = nn.ModuleList([PrefixDecoderLayer(shape)])
        self.norm = RMSNorm(shape.hidden, shape.eps)

    def identity_init(self) -> "PrefixLayer":
        """Zero the attention and MLP outputs: the layer then returns ``norm(h)``, a positive multiple of the
        target's final-norm state (same argmax under the target's head): untrained heads start as the target."""
        layer = self.layers[0]
        nn.init.zeros_(layer.self_attn.o_proj.weight)
        nn.init.zeros_(layer.mlp.down_proj.weight)
        return self

    def forward(self, hidden: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor,
                cache: DraftCache | None = None) -> torch.Tensor:
        x = hidden
        for layer in self.layers:
            x = layer(x, positions, mask, cache)
        return self.norm(x)

    def extend(self, hidden: torch.Tensor, cache: DraftCache) -> torch.Tensor:
        """Feed the context's next rows (causal over the cache); returns their features ``[k, h]``.

        >>> import torch; from types import SimpleNamespace as N
        >>> layer = PrefixLayer(LayerShape.from_config(N(hidden_size=8, num_attention_heads=2))); c = DraftCache()
        >>> layer.extend(torch.randn(3, 8), c).shape, layer.extend(torch.randn(2, 8), c).shape, c.length
        (torch.Size([3, 8]), torch.Size([2, 8]), 5)
        """
        k, start = hidden.shape[0], cache.length
        positions = torch.arange(start, start + k, device=hidden.device)
        # row i sees rows <= start + i; a long prompt's rows go in slices (bounded memory)
        return torch.cat([self.forward(hidden[rows], positions[rows], mask, cache)
                          for rows, mask in causal_chunks(start, k, hidden.device)])
