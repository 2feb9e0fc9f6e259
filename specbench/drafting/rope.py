"""Rotary position frequencies of the EAGLE draft layer, with the target's RoPE scaling.

The reference's draft attention (SafeAILab/EAGLE ``eagle/model/cnets.py``, ``_init_rope``) honours the
target config's ``rope_scaling``: ``linear`` divides positions by ``factor``; ``dynamic`` (NTK) keeps the
base frequencies up to ``max_position_embeddings`` and beyond it raises the base to
``theta * (factor * L / max_pos - (factor - 1)) ** (d / (d - 2))`` for a sequence of L positions. A
draft that ignored it would rotate its queries and keys at other angles than the target it was
trained beside. Other scaling types (yarn, llama3, longrope) are refused in one line.

Example: ``RopeScaling("linear", 2.0, 2048).angles(torch.tensor([4]), inv_freq)`` equals the unscaled
angles at position 2.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from specbench.errors import ConfigError

SUPPORTED = ("default", "linear", "dynamic")


@dataclass(frozen=True)
class RopeScaling:
    """``kind`` default | linear | dynamic; ``factor``; ``max_positions``: the target's trained length."""

    kind: str = "default"
    factor: float = 1.0
    max_positions: int = 2048

    @staticmethod
    def from_config(cfg: Any) -> "RopeScaling":
        """Read ``rope_scaling`` (transformers 4) or ``rope_parameters`` (transformers 5) of a model config.

        >>> from types import SimpleNamespace as N
        >>> RopeScaling.from_config(N(rope_scaling={"type": "linear", "factor": 4.0}, max_position_embeddings=4096))
        RopeScaling(kind='linear', factor=4.0, max_positions=4096)
        """
        max_positions = int(getattr(cfg, "max_position_embeddings", None) or 2048)
        rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
        if not isinstance(rope, dict):
            return RopeScaling(max_positions=max_positions)
        kind = str(rope.get("rope_type") or rope.get("type") or "default")
        if kind not in SUPPORTED:
            raise ConfigError(f"eagle: the target's RoPE scaling {kind!r} is not supported by the draft layer "
                              f"(supported: {', '.join(SUPPORTED)})")
        factor = float(rope.get("factor", 1.0) or 1.0) if kind != "default" else 1.0
        return RopeScaling(kind, factor, max_positions)

    def inv_freq(self, base_inv_freq: torch.Tensor, theta: float, seq_len: int) -> torch.Tensor:
        """The frequencies for a call whose longest position is ``seq_len - 1`` (only ``dynamic`` depends on it)."""
        if self.kind != "dynamic" or seq_len <= self.max_positions:
            return base_inv_freq
        dim = 2 * base_inv_freq.numel()
        base = theta * ((self.factor * seq_len / self.max_positions) - (self.factor - 1)) ** (dim / (dim - 2))
        return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32, device=base_inv_freq.device) / dim))

    def angles(self, positions: torch.Tensor, base_inv_freq: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
        """``[.., n, d/2]`` rotation angles of ``positions [.., n]`` (float32)."""
        pos = positions.float()
        if self.kind == "linear":
            pos = pos / self.factor
        seq_len = int(positions.max()) + 1 if positions.numel() else 0
        return pos[..., None] * self.inv_freq(base_inv_freq, theta, seq_len)

    def rotate(self, x: torch.Tensor, positions: torch.Tensor, base_inv_freq: torch.Tensor,
               theta: float = 10000.0) -> torch.Tensor:
        """``x [.., n, d]`` rotated at ``positions [n]``, or ``x [B, H, n, d]`` at per-row ``positions [B, n]`` (the
        rotate-half convention of Llama / Qwen).

        >>> x = torch.tensor([[1.0, 0.0]])  # d = 2: one frequency, 1 rad per position
        >>> RopeScaling().rotate(x, torch.tensor([0]), torch.ones(1)).tolist()
        [[1.0, 0.0]]
        >>> [round(v, 4) for v in RopeScaling().rotate(x, torch.tensor([1]), torch.ones(1))[0].tolist()]
        [0.5403, 0.8415]
        """
        freqs = self.angles(positions, base_inv_freq, theta)  # [n, d/2] fp32
        cos, sin = (torch.cat([f, f], -1).to(x.dtype) for f in (freqs.cos(), freqs.sin()))  # [.., n, d]
        if positions.dim() > 1:  # one row of positions per batch entry: broadcast over the heads
            cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
        half = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin
