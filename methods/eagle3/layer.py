"""The EAGLE-3 draft network (Li et al. 2025): fused low / middle / high target features, one decoder layer
over ``[embedding, feature]``, and its own head over a reduced vocabulary.

Row i of the context reads the target's hidden states of three layers at position i (inputs of decoder
layers 2, L // 2 and L - 3 of an L-layer target, concatenated, ``[3 * H_t]``), fused by ``fc`` to the
draft's size ``h``; and the embedding of token ``i + 1``. The decoder layer normalises both
(``input_layernorm`` for the embedding, ``hidden_norm`` for the feature), concatenates them ``[2h]`` for
the attention's projections, adds the attention's output to the (un-normalised) feature, then a SwiGLU
MLP. Its output ``g_{i+1}`` is the draft's own feature: ``lm_head(norm(g))`` scores the next token over the
draft vocabulary, and drafting deeper feeds ``g`` back in place of a fused target feature (no ``fc``).

Parameter names are the reference's checkpoint names (``fc``, ``midlayer.self_attn.q_proj``, ``norm``,
``lm_head``, ``d2t``, ``t2d``). Example: SmolLM2-135M (H_t = h = 576, 9 heads, 3 KV heads, MLP 1536) and an
8192-token draft vocabulary: fc 1.0M + layer 4.1M + head 4.7M = 9.8M parameters.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from specbench.api import MLP, DraftCache, LayerShape, RMSNorm, frozen_rows, kept_columns

Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""``attend(q [.., H, n, d], k [.., KV, n, d], v [.., KV, n, d]) -> [.., H, n, d]``: where the keys come from
(a draft cache and a tree mask when drafting, the unrolled steps when training) is the caller's business."""


def reference_layers(num_layers: int) -> tuple[int, int, int]:
    """The reference's low / middle / high choice: the inputs of decoder layers 2, L // 2 and L - 3.

    Shallow targets (fewer than 8 layers, where the reference's rule collides or runs out) get each index
    clamped to ``0..L-1``; the fused feature keeps its three parts. (Indices as the engine's: 0 is the
    embeddings, ``i`` the input of decoder layer ``i``.)

    >>> reference_layers(30), reference_layers(32), reference_layers(2)
    ((2, 15, 27), (2, 16, 29), (0, 1, 1))
    """
    return tuple(sorted(min(max(i, 0), num_layers - 1) for i in (2, num_layers // 2, num_layers - 3)))  # type: ignore[return-value]


def rotate(x: torch.Tensor, positions: torch.Tensor, shape: LayerShape, inv_freq: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of ``x [.., n, d]`` at ``positions [n]`` (the target's RoPE scaling)."""
    freqs = shape.rope_scaling.angles(positions, inv_freq, shape.rope_theta)  # [n, d/2] fp32
    cos, sin = (torch.cat([f, f], -1).to(x.dtype) for f in (freqs.cos(), freqs.sin()))  # [n, d]
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


class Attention(nn.Module):
    """Projections of the ``[2h]`` input to grouped-query heads, RoPE, and the output projection."""

    def __init__(self, s: LayerShape) -> None:
        super().__init__()
        self.s = s
        self.q_proj = nn.Linear(2 * s.hidden, s.heads * s.head_dim, bias=False)
        self.k_proj = nn.Linear(2 * s.hidden, s.kv_heads * s.head_dim, bias=False)
        self.v_proj = nn.Linear(2 * s.hidden, s.kv_heads * s.head_dim, bias=False)
        self.o_proj = nn.Linear(s.heads * s.head_dim, s.hidden, bias=False)
        # fp32 and not a buffer: a bf16 draft must not round its rotation frequencies
        self._inv_freq = 1.0 / (s.rope_theta ** (torch.arange(0, s.head_dim, 2, dtype=torch.float32) / s.head_dim))

    def forward(self, x: torch.Tensor, positions: torch.Tensor, attend: Attend) -> torch.Tensor:
        """``x [.., n, 2h]`` -> ``[.., n, h]``."""
        s, n, lead = self.s, x.shape[-2], x.shape[:-2]
        if self._inv_freq.device != x.device:
            self._inv_freq = self._inv_freq.to(x.device)

        def heads(t: torch.Tensor, count: int) -> torch.Tensor:  # [.., n, count*d] -> [.., count, n, d]
            return t.view(*lead, n, count, s.head_dim).transpose(-3, -2)

        q = rotate(heads(self.q_proj(x), s.heads), positions, s, self._inv_freq)
        k = rotate(heads(self.k_proj(x), s.kv_heads), positions, s, self._inv_freq)
        out = attend(q, k, heads(self.v_proj(x), s.kv_heads))  # [.., H, n, d]
        return self.o_proj(out.transpose(-3, -2).reshape(*lead, n, s.heads * s.head_dim))


def cached_attention(mask: torch.Tensor, cache: DraftCache | None, kv_heads: int) -> Attend:
    """Attention over a draft cache's rows then the new ones, ``mask [n, L]`` bool (True = may attend); 2-D rows
    only (``[H, n, d]``), the drafting path."""

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if cache is not None:
            k, v = cache.append(k, v)
        heads, n, d = q.shape
        rep = heads // kv_heads
        # the query heads sharing a KV head become extra query rows of that head (every head has the same mask)
        out = F.scaled_dot_product_attention(q.reshape(kv_heads, rep * n, d), k, v,
                                             attn_mask=mask.repeat(rep, 1) if rep > 1 else mask)
        return out.view(heads, n, d)

    return attend


class DecoderLayer(nn.Module):
    def __init__(self, s: LayerShape) -> None:
        super().__init__()
        self.self_attn = Attention(s)
        self.mlp = MLP(s)
        self.hidden_norm = RMSNorm(s.hidden, s.eps)
        self.input_layernorm = RMSNorm(s.hidden, s.eps)
        self.post_attention_layernorm = RMSNorm(s.hidden, s.eps)

    def forward(self, emb: torch.Tensor, x: torch.Tensor, positions: torch.Tensor, attend: Attend) -> torch.Tensor:
        """``emb``, ``x [.., n, h]`` -> ``[.., n, h]``; the residual is the feature before its norm."""
        both = torch.cat([self.input_layernorm(emb), self.hidden_norm(x)], -1)  # [.., n, 2h], embedding first
        x = x + self.self_attn(both, positions, attend)
        return x + self.mlp(self.post_attention_layernorm(x))


class Eagle3Layer(nn.Module):
    """``fc``, ``midlayer``, ``norm``, ``lm_head`` and the vocabulary buffers ``d2t`` / ``t2d``.

    ``embed``: the target's input embedding (frozen, not saved) unless ``own_embedding`` (a published
    draft narrower than its target carries its own ``embed_tokens``).
    """

    def __init__(self, shape: LayerShape, target_hidden: int, vocab_size: int, draft_vocab: int,
                 embed: nn.Module | None, features: int = 3) -> None:
        super().__init__()
        self.shape, self.target_hidden, self.features = shape, target_hidden, features
        self.fc = nn.Linear(features * target_hidden, shape.hidden, bias=False)
        self.midlayer = DecoderLayer(shape)
        self.norm = RMSNorm(shape.hidden, shape.eps)
        self.lm_head = nn.Linear(shape.hidden, draft_vocab, bias=False)
        self.register_buffer("d2t", torch.zeros(draft_vocab, dtype=torch.long))
        self.register_buffer("t2d", torch.ones(vocab_size, dtype=torch.bool) if draft_vocab == vocab_size
                             else torch.zeros(vocab_size, dtype=torch.bool))
        self._embed = [embed]  # a list: the target's embedding is not a submodule (not saved, not trained)
        if embed is None:
            self.embed_tokens = nn.Embedding(vocab_size, shape.hidden).requires_grad_(False)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():  # frozen (and the target's may be tied to its output head)
            table = self._embed[0] if self._embed[0] is not None else self.embed_tokens
            return table(tokens)

    def fuse(self, layer_states: torch.Tensor) -> torch.Tensor:
        """``[.., n, 3, H_t]`` target states (the engine's ``layer_states``) -> ``[.., n, h]`` features."""
        return self.fc(layer_states.flatten(-2).to(self.fc.weight.dtype))

    def step(self, features: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor, attend: Attend) -> torch.Tensor:
        """One pass of the decoder layer: features ``[.., n, h]`` (fused or the draft's own), next tokens ``[.., n]``."""
        return self.midlayer(self.embed(tokens).to(features.dtype), features, positions, attend)

    def forward(self, features: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor,
                cache: DraftCache | None = None) -> torch.Tensor:
        """The drafting path: rows ``[n, h]`` after the cache's, ``mask [n, cache + n]`` bool -> ``[n, h]``."""
        return self.step(features, tokens, positions, cached_attention(mask, cache, self.shape.kv_heads))

    def logits(self, out: torch.Tensor) -> torch.Tensor:
        """``[.., h]`` draft features -> ``[.., N]`` scores over the draft vocabulary."""
        return self.lm_head(self.norm(out))

    def to_target(self, draft_ids: torch.Tensor) -> torch.Tensor:
        """Draft ids -> target ids (``id + d2t[id]``)."""
        return draft_ids + self.d2t[draft_ids]

    def restrict(self, keep: np.ndarray) -> None:
        """Score only the target ids in ``keep`` that the draft vocabulary holds (FR-Spec's ``vocab=fr:N``): the
        head keeps their rows, ``d2t`` / ``t2d`` describe the smaller vocabulary."""
        dev = self.d2t.device
        columns = self.to_target(torch.arange(self.lm_head.out_features, device=dev))
        rows = torch.as_tensor(kept_columns(columns.cpu().numpy(), keep), device=dev)
        kept = columns[rows]
        self.lm_head = frozen_rows(self.lm_head, rows)
        self.d2t = kept - torch.arange(len(rows), device=dev)
        self.t2d = torch.zeros_like(self.t2d).index_fill_(0, kept, True)

    def parameter_count(self) -> int:
        return sum(p.numel() for n, p in self.named_parameters() if not n.startswith("embed_tokens"))


def scaled_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``q [.., n, d] @ k [.., m, d]^T / sqrt(d)`` in fp32."""
    return (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
