"""The DFlash draft network (Chen et al. 2026, z-lab/dflash): a few Qwen3-style decoder layers that denoise a whole
block of mask tokens in one forward, conditioned on target hidden states injected as keys and values.

The context: the target's hidden states of several layers (``reference_layers``) at every position before the
block, concatenated and fused by ``fc`` then ``hidden_norm`` to the draft's width ``h`` (the target's). Every
draft layer projects the fused context with its own ``k_proj`` / ``v_proj`` (no norm before, no attention among
context rows), so the context's keys and values depend on its row alone and are cached once per position.

The block: ``[root, MASK, ..., MASK]`` at positions ``P .. P + B - 1`` (the root at ``P``, the first position
without a target state), embedded with the target's frozen embedding. Each block row attends to every context row
and to every row of its own block, bidirectionally (no causal mask), and its output after ``norm`` is scored by the
target's frozen output head: row ``j`` predicts the token at ``P + j``. Queries and keys get a per-head RMSNorm
(``q_norm`` / ``k_norm``) before RoPE, as Qwen3's attention.

Parameter names are the reference checkpoint's (``layers.{i}.self_attn.q_proj``, ``fc``, ``hidden_norm``,
``norm``, ...), so a published state dict loads as it is. Example: the embedded SmolLM2-135M (h = 576, 9 heads,
3 KV heads, MLP 1536), 5 layers over 5 target layers: fc 1.66M + 5 x 3.54M = 19.4M parameters.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from specbench.api import MLP, Attention, LayerShape, RMSNorm


def reference_layers(num_target_layers: int, num_draft_layers: int) -> tuple[int, ...]:
    """The reference's tapped layers (``build_target_layer_ids``) as the engine's hidden-state indices.

    The reference spreads ``n`` layer ids evenly from 1 to ``L - 3`` (one draft layer: ``L // 2``) and reads the
    *output* of each, i.e. the input of the next layer: engine index ``id + 1``. Shallow targets (the tests'
    2-layer models, where ``L - 3 < 1``) get each id clamped to ``0 .. L - 2``.

    >>> reference_layers(36, 5)  # Qwen3-8B: the reference's ids 1, 9, 17, 25, 33
    (2, 10, 18, 26, 34)
    >>> reference_layers(30, 5), reference_layers(30, 1), reference_layers(2, 3)
    ((2, 9, 15, 21, 28), (16,), (1, 1, 1))
    """
    if num_draft_layers == 1:
        ids = [num_target_layers // 2]
    else:
        start, end = 1, num_target_layers - 3
        ids = [int(round(start + i * (end - start) / (num_draft_layers - 1))) for i in range(num_draft_layers)]
    return tuple(min(max(i, 0), max(num_target_layers - 2, 0)) + 1 for i in ids)


class BlockAttention(Attention):
    """Grouped-query attention of block rows over ``[context keys, the block's own keys]``: the kit's projections
    and RoPE (``specbench.api.Attention``) with Qwen3's per-head ``q_norm`` / ``k_norm`` before the rotation."""

    def __init__(self, s: LayerShape) -> None:
        super().__init__(s)
        self.q_norm = RMSNorm(s.head_dim, s.eps)
        self.k_norm = RMSNorm(s.head_dim, s.eps)

    def _heads(self, t: torch.Tensor, count: int) -> torch.Tensor:  # [.., n, count*d] -> [.., count, n, d]
        return t.view(*t.shape[:-1], count, self.s.head_dim).transpose(-3, -2)

    def keys(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys (normed, rotated) and values ``[.., KV, n, d]`` of rows ``x [.., n, h]`` at ``positions [n]``."""
        k = self._rope(self.k_norm(self._heads(self.k_proj(x), self.s.kv_heads)), positions)
        return k, self._heads(self.v_proj(x), self.s.kv_heads)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, context: tuple[torch.Tensor, torch.Tensor],
                mask: torch.Tensor | None) -> torch.Tensor:
        """Block rows ``x [.., n, h]`` at ``positions [n]``; ``context`` keys / values ``[.., KV, m, d]``; ``mask``
        ``[.., n, m + n]`` bool (True = may attend) or None (every row sees everything: one block) -> ``[.., n, h]``."""
        s = self.s
        q = self._rope(self.q_norm(self._heads(self.q_proj(x), s.heads)), positions)
        k, v = self.keys(x, positions)
        k, v = torch.cat([context[0], k], -2), torch.cat([context[1], v], -2)
        rep = s.heads // s.kv_heads
        if rep > 1:  # query head i reads KV head i // rep
            k, v = k.repeat_interleave(rep, -3), v.repeat_interleave(rep, -3)
        out = F.scaled_dot_product_attention(q, k.to(q.dtype), v.to(q.dtype),
                                             attn_mask=None if mask is None else mask.unsqueeze(-3))
        return self.o_proj(out.transpose(-3, -2).reshape(*x.shape[:-1], s.heads * s.head_dim))


class BlockLayer(nn.Module):
    def __init__(self, s: LayerShape) -> None:
        super().__init__()
        self.self_attn = BlockAttention(s)
        self.mlp = MLP(s)
        self.input_layernorm = RMSNorm(s.hidden, s.eps)
        self.post_attention_layernorm = RMSNorm(s.hidden, s.eps)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, context: tuple[torch.Tensor, torch.Tensor],
                mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), positions, context, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class DFlashDraft(nn.Module):
    """``layers``, ``fc``, ``hidden_norm``, ``norm``; the target's embedding and output head are borrowed (frozen,
    not saved). ``feature_layers``: the engine indices of the tapped target layers, in ``fc``'s input order."""

    def __init__(self, shape: LayerShape, n_layers: int, feature_layers: tuple[int, ...], block_size: int,
                 mask_token_id: int, target: nn.Module) -> None:
        super().__init__()
        self.shape, self.feature_layers = shape, tuple(feature_layers)
        self.block_size, self.mask_token_id = int(block_size), int(mask_token_id)
        target_hidden = int(target.get_input_embeddings().weight.shape[1])
        self.layers = nn.ModuleList(BlockLayer(shape) for _ in range(n_layers))
        self.fc = nn.Linear(len(self.feature_layers) * target_hidden, shape.hidden, bias=False)
        self.hidden_norm = RMSNorm(shape.hidden, shape.eps)
        self.norm = RMSNorm(shape.hidden, shape.eps)
        self._target = [target.get_input_embeddings(), target.get_output_embeddings()]  # not submodules

    def context(self, layer_states: torch.Tensor) -> torch.Tensor:
        """``[.., n, len(feature_layers), H_t]`` target states -> ``[.., n, h]`` fused context rows."""
        return self.hidden_norm(self.fc(layer_states.flatten(-2).to(self.fc.weight.dtype)))

    def context_kv(self, context: torch.Tensor, positions: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer, the keys and values ``[.., KV, n, d]`` of fused context rows at ``positions``."""
        return [layer.self_attn.keys(context, positions) for layer in self.layers]

    def forward(self, block_ids: torch.Tensor, positions: torch.Tensor,
                context: list[tuple[torch.Tensor, torch.Tensor]], mask: torch.Tensor | None = None) -> torch.Tensor:
        """Block tokens ``[.., n]`` at ``positions [n]`` over each layer's ``context`` -> ``[.., n, h]`` (normed)."""
        with torch.no_grad():  # the target's embedding is frozen
            x = self._target[0](block_ids).to(self.fc.weight.dtype)
        for layer, kv in zip(self.layers, context):
            x = layer(x, positions, kv, mask)
        return self.norm(x)

    def logits(self, out: torch.Tensor, training: bool = False) -> torch.Tensor:
        """``[.., h]`` block outputs -> ``[.., V]`` scores by the target's own head (``training``: through its
        detached weights, so no gradient reaches the target)."""
        head = self._target[1]
        if not training:
            return head(out.to(head.weight.dtype))
        bias = None if head.bias is None else head.bias.detach()
        return F.linear(out, head.weight.detach().to(out.dtype), None if bias is None else bias.to(out.dtype))

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())
