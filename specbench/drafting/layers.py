"""The pieces draft networks share (EAGLE's draft layer, EAGLE-3's, Hydra++'s prefix layer): the layer's sizes
read from any HF target's config (``LayerShape``), Llama-style RMSNorm, attention with RoPE over the draft's own
cache (``Attention``, ``DraftCache``), the SwiGLU MLP, one decoder layer, and the chunked causal masks a draft
layer reads a long prompt with (``causal_chunks``).

Parameter names follow the published EAGLE checkpoints (``self_attn.q_proj``, ``mlp.gate_proj``, ...), so a
reference state dict loads as it is. Example: ``LayerShape.from_config(target.config)`` for SmolLM2-135M -> hidden
576, 9 heads, 3 KV heads of 64, MLP 1536; ``DecoderLayer(shape)`` is then one such layer of the target's shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from specbench.drafting.rope import RopeScaling


@dataclass(frozen=True)
class LayerShape:
    """The draft layer's sizes, read from the target's config (any HF family) or a checkpoint's."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    eps: float = 1e-6
    rope_theta: float = 10000.0
    qkv_bias: bool = False
    rope_type: str = "default"  # the target's RoPE scaling (drafting/rope.py): default | linear | dynamic
    rope_factor: float = 1.0
    max_positions: int = 2048

    @property
    def rope_scaling(self) -> RopeScaling:
        return RopeScaling(self.rope_type, self.rope_factor, self.max_positions)

    @staticmethod
    def from_config(cfg: Any) -> "LayerShape":
        """>>> from types import SimpleNamespace as N
        >>> LayerShape.from_config(N(hidden_size=64, num_attention_heads=4)).head_dim
        16
        """
        hidden = int(_first(cfg, ("hidden_size", "n_embd")))
        heads = int(_first(cfg, ("num_attention_heads", "n_head")))
        kv = int(_first(cfg, ("num_key_value_heads",), heads) or heads)
        head_dim = int(_first(cfg, ("head_dim",), hidden // heads) or hidden // heads)
        inter = int(_first(cfg, ("intermediate_size", "n_inner"), 4 * hidden) or 4 * hidden)
        eps = float(_first(cfg, ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon"), 1e-6))
        rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
        theta = float(rope.get("rope_theta", 0) if isinstance(rope, dict) else 0) or float(_first(cfg, ("rope_theta",), 10000.0))
        scaling = RopeScaling.from_config(cfg)
        return LayerShape(hidden, heads, kv, head_dim, inter, eps, theta, bool(getattr(cfg, "attention_bias", False)),
                          scaling.kind, scaling.factor, scaling.max_positions)


def _first(cfg: Any, names: tuple[str, ...], default: Any = None) -> Any:
    for name in names:
        value = getattr(cfg, name, None)
        if value is not None:
            return value
    if default is None:
        raise ValueError(f"model config has none of {names}")
    return default


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return self.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, s: LayerShape) -> None:
        super().__init__()
        self.s = s
        self.q_proj = nn.Linear(s.hidden, s.heads * s.head_dim, bias=s.qkv_bias)
        self.k_proj = nn.Linear(s.hidden, s.kv_heads * s.head_dim, bias=s.qkv_bias)
        self.v_proj = nn.Linear(s.hidden, s.kv_heads * s.head_dim, bias=s.qkv_bias)
        self.o_proj = nn.Linear(s.heads * s.head_dim, s.hidden, bias=False)
        # a plain fp32 tensor, not a buffer: a bf16 draft must not round its rotation frequencies
        self._inv_freq = 1.0 / (s.rope_theta ** (torch.arange(0, s.head_dim, 2, dtype=torch.float32) / s.head_dim))
        self._scaling = s.rope_scaling

    def _rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """``x [.., n, d]`` rotated at ``positions [n]`` (or per batch entry, ``[B, n]``: ``RopeScaling.rotate``)."""
        if self._inv_freq.device != x.device:
            self._inv_freq = self._inv_freq.to(x.device)
        return self._scaling.rotate(x, positions, self._inv_freq, self.s.rope_theta)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, cache: "DraftCache | None",
                ) -> torch.Tensor:
        """``x`` [n, h]; ``mask`` [n, L] bool (True = may attend) over the cache's rows then these n."""
        s, n = self.s, x.shape[0]
        q = self._rope(self.q_proj(x).view(n, s.heads, s.head_dim).transpose(0, 1), positions)
        k = self._rope(self.k_proj(x).view(n, s.kv_heads, s.head_dim).transpose(0, 1), positions)
        v = self.v_proj(x).view(n, s.kv_heads, s.head_dim).transpose(0, 1)
        if cache is not None:
            k, v = cache.append(k, v)
        rep = s.heads // s.kv_heads
        # grouped-query attention without copying the cache per head: the query heads sharing a KV head
        # become extra query rows of that head (every head has the same mask)
        q = q.reshape(s.kv_heads, rep * n, s.head_dim)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.repeat(rep, 1) if rep > 1 else mask)
        return self.o_proj(out.view(s.heads, n, s.head_dim).transpose(0, 1).reshape(n, s.heads * s.head_dim))


class MLP(nn.Module):
    def __init__(self, s: LayerShape) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.up_proj = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.down_proj = nn.Linear(s.intermediate, s.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, s: LayerShape) -> None:
        super().__init__()
        self.self_attn = Attention(s)
        self.mlp = MLP(s)
        self.post_attention_layernorm = RMSNorm(s.hidden, s.eps)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, cache: "DraftCache | None") -> torch.Tensor:
        x = x + self.self_attn(x, positions, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class DraftCache:
    """The draft layer's keys and values ([kv_heads, rows, d], grown by doubling); ``truncate`` drops
    the rows of a finished draft tree so only the context's rows stay."""

    def __init__(self) -> None:
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        self.length = 0

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = k.shape[1]
        if self.k is None or self.length + n > self.k.shape[1]:
            cap = max(256, 2 * (self.length + n))
            grown_k = k.new_empty(k.shape[0], cap, k.shape[2])
            grown_v = v.new_empty(v.shape[0], cap, v.shape[2])
            if self.k is not None and self.v is not None:
                grown_k[:, : self.length] = self.k[:, : self.length]
                grown_v[:, : self.length] = self.v[:, : self.length]
            self.k, self.v = grown_k, grown_v
        assert self.v is not None
        self.k[:, self.length : self.length + n] = k
        self.v[:, self.length : self.length + n] = v
        self.length += n
        return self.k[:, : self.length], self.v[:, : self.length]

    def truncate(self, length: int) -> None:
        self.length = min(self.length, length)


# new context rows a draft layer reads per pass: one pass over a whole 8k-token prompt would hold its
# attention weights ([heads, 8k, 8k] fp32, 2.3 GB for SmolLM2) and their copies at once (measured: +5.4 GB
# of peak memory, and a long-input run killed for memory); 512 rows keep that under 0.2 GB
PREFILL_ROWS = 512


def causal_chunks(start: int, k: int, device: torch.device | str | None = None,
                  rows: int = PREFILL_ROWS) -> Iterator[tuple[slice, torch.Tensor]]:
    """Slices of ``k`` new rows that follow ``start`` cached ones, at most ``rows`` each, with each slice's
    causal mask ``[b - a, start + b]`` (True = may attend). A draft layer fed slice by slice appends each to
    its cache before the next, so every row attends to exactly what one pass over all ``k`` would show it,
    with attention memory O(rows x context) instead of O(k x context).

    >>> [(s.start, s.stop, tuple(m.shape), m[-1].sum().item()) for s, m in causal_chunks(2, 5, rows=2)]
    [(0, 2, (2, 4), 4), (2, 4, (2, 6), 6), (4, 5, (1, 7), 7)]
    """
    for a in range(0, k, rows):
        b = min(k, a + rows)
        yield slice(a, b), torch.ones(b - a, start + b, dtype=torch.bool, device=device).tril(start + a)
