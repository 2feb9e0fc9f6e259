"""HASS's harmonized context alignment (Zhang et al. 2025, "Learning Harmonized Representations for
Speculative Sampling") for EAGLE's draft layer: training forwards in which the draft reads its *own* earlier
predicted features, as it does when it drafts deeper than one token.

At decode time the draft's token at depth ``d`` is scored from a context whose last ``d - 1`` features are the
draft's own predictions; plain EAGLE training only ever shows it the target's features. HASS runs ``steps``
forwards per batch. Forward ``j`` (1-based) reads a *stream* of features per row and lets row ``t`` attend to

- the target's features at positions ``<= t - (j - 1)`` (stream 0),
- the draft's stream ``s`` (``1 <= s < j``) only at position ``t - (j - 1 - s)``,

and its query (and residual) is stream ``j - 1`` at ``t``. Stream ``s`` holds the previous forward's
predictions shifted by one row (``q_s[t] = pred_s[t - 1]``; a window's first row keeps stream ``s - 1``'s), so
at forward 3 row ``t`` sees: the target's features up to ``t - 2``, the draft's depth-1 feature at ``t - 1`` and
its depth-2 feature at ``t``, predicting ``f_{t+1}``: a chain drafted two tokens deep. Tokens stay the
ground truth's. Each forward's loss is the usual one (plus HASS's top-k term) against the same targets; the
streams are detached between forwards (the reference's ``q_hidden_states.detach()``).

Example: a window of 4 rows at forward 3 (``align_mask``): row 3 may attend the target's rows 0..1, the draft's
stream 1 at row 2 and stream 2 at row 3; row 0 only stream 2 at row 0 (which holds the target's feature).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from specbench_methods.eagle.layer import EagleLayer


def align_mask(block: torch.Tensor, positions: torch.Tensor, step: int) -> torch.Tensor:
    """``[n, step * n]`` bool: which rows of streams ``0 .. step-1`` row ``i`` may attend at forward ``step``.

    ``block`` [n]: each row's window; ``positions`` [n]: its position in the window.

    >>> m = align_mask(torch.zeros(4, dtype=torch.long), torch.arange(4), 3).int()
    >>> m[3].tolist()  # row 3: target rows 0,1 | stream 1 row 2 | stream 2 row 3
    [1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    >>> m[0].tolist()
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    >>> align_mask(torch.zeros(3, dtype=torch.long), torch.arange(3), 1).int().tolist()  # plain causal
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    same = block[:, None] == block[None, :]
    t, u = positions[:, None], positions[None, :]
    parts = [same & (u <= t - (step - 1))]
    parts += [same & (u == t - (step - 1 - s)) for s in range(1, step)]
    return torch.cat(parts, 1)


def next_stream(previous: torch.Tensor, predicted: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The stream the next forward reads: row ``t`` holds the prediction made at row ``t - 1`` of the same
    window (the draft's own feature of position ``t``); a window's first row keeps ``previous``'s.

    >>> next_stream(torch.tensor([[0.], [1.], [2.]]), torch.tensor([[10.], [11.], [12.]]), torch.tensor([0, 1, 0]))
    tensor([[ 0.],
            [10.],
            [ 2.]])
    """
    shifted = torch.cat([previous[:1], predicted[:-1]])
    first = (positions == 0)[:, None]
    return torch.where(first, previous, shifted).detach()


def harmonized_forward(layer: EagleLayer, streams: list[torch.Tensor], next_tokens: torch.Tensor,
                       positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The draft layer's forward ``len(streams)``: queries (and the residual) from the last stream, keys and
    values from every stream at the same positions, ``mask`` from ``align_mask``. With one stream this is
    exactly ``layer(features, next_tokens, positions, mask)``.

    Unlike the reference, the softmax runs over the allowed keys only (as every decode-time attention does);
    the reference's training attention gives masked columns logit 0 inside the softmax (README, deviations).
    """
    if len(layer.layers) != 1:
        raise ValueError("hass: the EAGLE draft has one decoder layer")
    with torch.no_grad():  # the target's embedding is frozen
        emb = layer._embed[0](next_tokens).to(streams[0].dtype)
    xs = [layer.fc(torch.cat([emb, f], -1)) for f in streams]
    dec = layer.layers[0]
    attn, s, n = dec.self_attn, dec.self_attn.s, xs[0].shape[0]
    q = attn._rope(attn.q_proj(xs[-1]).view(n, s.heads, s.head_dim).transpose(0, 1), positions)
    every = torch.cat(xs)
    pos = positions.repeat(len(xs))
    k = attn._rope(attn.k_proj(every).view(-1, s.kv_heads, s.head_dim).transpose(0, 1), pos)
    v = attn.v_proj(every).view(-1, s.kv_heads, s.head_dim).transpose(0, 1)
    rep = s.heads // s.kv_heads
    q = q.reshape(s.kv_heads, rep * n, s.head_dim)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.repeat(rep, 1) if rep > 1 else mask)
    x = xs[-1] + attn.o_proj(out.view(s.heads, n, s.head_dim).transpose(0, 1).reshape(n, s.heads * s.head_dim))
    return x + dec.mlp(dec.post_attention_layernorm(x))


def topk_loss(p_target: torch.Tensor, logp: torch.Tensor, k: int) -> torch.Tensor:
    """HASS's harmonized objective: the cross-entropy restricted to the target's ``k`` most likely tokens,
    ``-sum_{i in topk(p)} p_i log q_i``, averaged over rows.

    >>> p = torch.tensor([[0.7, 0.2, 0.1]]); logq = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    >>> round(topk_loss(p, logq, 1).item(), 4)  # -0.7 log 0.5
    0.4852
    """
    top = p_target.topk(min(k, p_target.shape[-1]), -1).indices
    return -(p_target.gather(-1, top) * logp.gather(-1, top)).sum(-1).mean()
