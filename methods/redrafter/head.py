"""The recurrent draft head: an RNN over draft tokens conditioned on the target's last hidden state.

    s_0 = 0,   s_i = SiLU(W e(tok_{i-1}) + U s_{i-1} + b)      (e = the target's frozen input embedding)
    x_i = Proj([context ; s_i]);   x_i <- x_i + SiLU(Linear(x_i))  (R times);   logits_i = LMHead(x_i)

``tok_0`` is g0, the root (the target's greedy token), so step i predicts the i-th draft token after
the root. The embedding table is *borrowed* from the target as a non-persistent buffer: it shares
the target's storage, is never trained and never written into a checkpoint.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from specbench_methods.redrafter.config import HeadConfig


class ResBlock(nn.Module):
    """``x + SiLU(Linear(x))`` with the linear layer zero-initialised (starts as the identity)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.silu(self.linear(x))


class DraftHead(nn.Module):
    """ReDrafter's draft head; ``step`` is one recurrence step, ``forward`` unrolls teacher-forced."""

    def __init__(self, config: HeadConfig) -> None:
        super().__init__()
        config.validate()
        self.config = config
        h = config.hidden_size
        self.rnn_w = nn.Linear(config.embed_dim, h, bias=True)  # W e(tok) + b
        self.rnn_u = nn.Linear(h, h, bias=False)  # U s
        self.proj = nn.Linear(2 * h, config.proj_dim) if config.proj_dim else None
        if self.proj is not None and config.proj_dim == h:
            # start as "read the context": Proj([c; s]) = c + small * s, so training starts from the target's
            # own LM head. That initial head is NOT a useful drafter: on c it predicts token t+1, which is
            # the root g0 again, not the draft token after it (99.8% of held-out positions; see README)
            with torch.no_grad():
                self.proj.weight[:, h:].mul_(0.1)
                self.proj.weight[:, :h].copy_(torch.eye(h))
                self.proj.bias.zero_()
        self.blocks = nn.ModuleList(ResBlock(config.feature_dim) for _ in range(config.num_blocks))
        self.lm_head = nn.Linear(config.feature_dim, config.vocab_size, bias=False)
        self.register_buffer("embed_weight", None, persistent=False)

    def attach(self, embedding: torch.Tensor) -> "DraftHead":
        """Borrow the target's input embedding table ``[V, e]`` (shared storage, no gradient)."""
        if tuple(embedding.shape) != (self.config.vocab_size, self.config.embed_dim):
            raise ValueError(f"embedding shape {tuple(embedding.shape)} does not match the head config {self.config}")
        self.embed_weight = embedding.detach()
        return self

    def init_from_target(self, output_embedding: torch.Tensor) -> None:
        """Start the head's own LM head from the target's output embedding ``[V, h]`` (copied).

        Untrained, such a head repeats the root: it reads the context like the target does, and the
        target's prediction at the context position is the root itself.
        """
        with torch.no_grad():
            if self.lm_head.weight.shape == output_embedding.shape:
                self.lm_head.weight.copy_(output_embedding)
            else:  # reference layout (2h features): the target head reads the context half
                self.lm_head.weight.zero_()
                self.lm_head.weight[:, : output_embedding.shape[1]].copy_(output_embedding)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.embed_weight is None:
            raise RuntimeError("DraftHead.attach(target input embedding) was not called")
        return F.embedding(tokens, self.embed_weight).to(self.rnn_w.weight.dtype)

    def features(self, context: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """``[..., h]`` context and ``[..., h]`` state -> ``[..., feature_dim]``."""
        x = torch.cat([context, state], dim=-1)
        if self.proj is not None:
            x = self.proj(x)
        for block in self.blocks:
            x = block(x)
        return x

    def step(self, context: torch.Tensor, state: torch.Tensor | None, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step for a batch: context ``[B, h]``, state ``[B, h]`` or None (= s_0 = 0), tokens ``[B]``.

        Returns (new state ``[B, h]``, logits ``[B, V]``).
        """
        pre = self.rnn_w(self.embed(tokens))
        if state is not None:
            pre = pre + self.rnn_u(state)
        state = F.silu(pre)
        return state, self.lm_head(self.features(context, state))

    def forward(self, context: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Teacher-forced unroll: context ``[B, h]``, input tokens ``[B, n]`` -> logits ``[B, n, V]``."""
        x = self.rnn_w(self.embed(tokens))  # [B, n, h]
        states = []
        state = None
        for i in range(tokens.shape[1]):
            pre = x[:, i] if state is None else x[:, i] + self.rnn_u(state)
            state = F.silu(pre)
            states.append(state)
        s = torch.stack(states, dim=1)  # [B, n, h]
        ctx = context.unsqueeze(1).expand(-1, tokens.shape[1], -1)
        return self.lm_head(self.features(ctx, s))


def drafting_head(head: DraftHead, ids: torch.Tensor | None, dtype: torch.dtype) -> DraftHead:
    """An inference copy of ``head`` in ``dtype`` whose LM head keeps only the rows ``ids`` (None: all).

    Its logits are over ``ids`` (column j scores target token ``ids[j]``); it still reads target ids as
    input and borrows the same embedding table. Example: the default SmolLM2 head with 8,192 ids in
    bfloat16 scores 8,192 x 576 bf16 weights per beam step instead of 49,152 x 576 fp32 (12x fewer bytes).
    """
    rows = head.lm_head.weight.detach()
    if ids is not None:
        rows = rows[ids.to(rows.device)]
    small = DraftHead(dataclasses.replace(head.config, vocab_size=1))  # LM head replaced below
    state = dict(head.state_dict(), **{"lm_head.weight": small.lm_head.weight.detach()})
    small.load_state_dict(state)  # strict: every other weight is the head's
    small.lm_head = nn.Linear(rows.shape[1], rows.shape[0], bias=False)
    with torch.no_grad():
        small.lm_head.weight.copy_(rows)
    small = small.to(device=rows.device, dtype=dtype).eval()
    small.embed_weight = head.embed_weight  # borrowed, shared storage (its rows are the target's V ids)
    return small


def build_head(config: HeadConfig, model: torch.nn.Module | None = None) -> DraftHead:
    """A fresh head; with ``model`` it borrows the input embedding and copies the output embedding."""
    head = DraftHead(config)
    if model is not None:
        head.attach(model.get_input_embeddings().weight)
        head.init_from_target(model.get_output_embeddings().weight)
    return head


def head_config_for(model: torch.nn.Module, proj: bool = True, num_blocks: int = 1) -> HeadConfig:
    """The default CPU-sized head for ``model``: project 2h -> h, ``num_blocks`` ResNet blocks, h x V head."""
    emb = model.get_input_embeddings().weight
    h = model.get_output_embeddings().weight.shape[1]
    return HeadConfig(hidden_size=h, embed_dim=emb.shape[1], vocab_size=emb.shape[0], proj_dim=h if proj else 0, num_blocks=num_blocks)
