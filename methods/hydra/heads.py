"""Hydra's sequentially dependent draft heads (Ankner et al. 2024).

Head k (0-based) guesses the token k + 1 positions after the root, like Medusa's head k, but it also reads
the embeddings of the tokens drafted before it on the same tree path: with ``c`` the context feature (the
target's last hidden state, or Hydra++'s prefix-layer feature, ``prefix.py``) and ``e_j`` the embedding of
the path's j-th token (``e_0`` = the root's)::

    x_k = [c, e_0, e_1, ..., e_k]                              # (k + 2) * h inputs
    f_k = R^(L-1)(B_k(x_k))    B_k(x) = P_k x + SiLU(W_k x + b_k)   R(y) = y + SiLU(V y + a)
    logits_k = LMHead(f_k)

``B_k`` is the reference's first ``ResBlock`` (its ``res_connection`` ``P_k`` maps the wider input back to
``h``); the ``L - 1`` further blocks are ONE module applied ``L - 1`` times, as the reference builds them
(``[ResBlock] * (L - 1)`` repeats one object, so its published weights hold one such block per head).

Worked example (h = 2, one head, L = 1): ``c = [1, 0]``, root embedding ``e_0 = [0, 1]``, ``P_0 = [I, I]``
(sums the two slots), ``W_0 = 0, b_0 = 0``: ``f_0 = [1, 1] + SiLU(0) = [1, 1]``; a different root changes
``f_0``, which a Medusa head (reading ``c`` only) could not see.

The LM head: published checkpoints carry one ``h x V`` head with bias per head (``own``); the default here
shares the target's frozen head, restricted to a draft vocabulary (``SubHead``), plus a trained bias per head.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from specbench.api import LayerShape, frozen_rows, kept_columns
from specbench_methods.hydra.prefix import PrefixLayer


class ResBlock(nn.Module):
    """``res(x) + SiLU(linear(x))`` from ``slots * h`` inputs to ``h``; ``res`` is the identity for one slot."""

    def __init__(self, hidden: int, slots: int = 1) -> None:
        super().__init__()
        self.linear = nn.Linear(slots * hidden, hidden)
        nn.init.zeros_(self.linear.weight)  # as the reference: the block starts as its residual path
        self.res_connection = nn.Linear(slots * hidden, hidden) if slots > 1 else None

    def identity_init(self) -> None:
        """``res`` copies the first slot (the context feature), everything else zero: the block returns ``c``."""
        nn.init.zeros_(self.linear.bias)
        if self.res_connection is not None:
            h = self.linear.out_features
            nn.init.zeros_(self.res_connection.bias)
            with torch.no_grad():
                self.res_connection.weight.zero_()
                self.res_connection.weight[:, :h] = torch.eye(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        res = x if self.res_connection is None else self.res_connection(x)
        return res + F.silu(self.linear(x))


class HeadMLP(nn.Module):
    """Head k's MLP: ``first`` reads ``(k + 2) h`` inputs; ``repeated`` (one module) runs ``num_layers - 1`` times."""

    def __init__(self, hidden: int, slots: int, num_layers: int, dropout: float) -> None:
        super().__init__()
        self.first = ResBlock(hidden, slots)
        self.repeated = ResBlock(hidden) if num_layers > 1 else None
        self.repeats = num_layers - 1
        self.dropout = nn.Dropout(dropout)  # the reference's Hydra++ puts one before every block

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.first(self.dropout(x))
        for _ in range(self.repeats):
            x = self.repeated(self.dropout(x))
        return x


class SubHead(nn.Module):
    """The target's output head (frozen) over the draft vocabulary ``ids`` (None = all of it): ``[n, h] -> [n, V']``."""

    def __init__(self, target_head: nn.Module, ids: np.ndarray | None) -> None:
        super().__init__()
        weight = target_head.weight.detach()
        self.ids = None if ids is None else torch.as_tensor(ids, dtype=torch.long, device=weight.device)
        self.linear = nn.Linear(weight.shape[1], weight.shape[0] if ids is None else len(ids), bias=False)
        self.linear.weight = nn.Parameter((weight if self.ids is None else weight[self.ids]).clone(), requires_grad=False)

    @property
    def size(self) -> int:
        return self.linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.to(self.linear.weight.dtype))

    def to_target(self, draft_ids: torch.Tensor) -> torch.Tensor:
        """Draft vocabulary ids -> the target's ids."""
        return draft_ids if self.ids is None else self.ids[draft_ids]

    def keep_rows(self, rows: torch.Tensor) -> None:
        """Only the rows ``rows`` of this head stay (FR-Spec's ``vocab=fr:N``), their target ids with them."""
        rows = rows.to(self.linear.weight.device)
        self.ids = self.to_target(rows)
        self.linear = frozen_rows(self.linear, rows)


class HydraHeads(nn.Module):
    """``num_heads`` sequentially dependent heads, Hydra++'s prefix layer when ``prefix`` is given, and their LM
    heads: ``own_vocab`` > 0 gives each head its own ``h x V`` head with bias (the reference's layout);
    otherwise ``head`` (a ``SubHead``, not saved) is shared and each head learns only a bias over its rows.

    ``logits(k, x [n, (k + 2) h]) -> [n, V']``; ``context(hidden, ...)`` -> the heads' context feature ``c``.
    """

    def __init__(self, hidden: int, num_heads: int, num_layers: int, prefix: LayerShape | None = None,
                 dropout: float = 0.0, head: SubHead | None = None, own_vocab: int = 0) -> None:
        super().__init__()
        if (head is None) == (own_vocab <= 0):
            raise ValueError("HydraHeads needs either a shared SubHead or own_vocab > 0")
        self.hidden, self.num_heads, self.num_layers = hidden, num_heads, num_layers
        self.mlps = nn.ModuleList(HeadMLP(hidden, k + 2, num_layers, dropout) for k in range(num_heads))
        self.prefix = PrefixLayer(prefix) if prefix is not None else None
        self.head_dropout = nn.Dropout(dropout)
        self.own = nn.ModuleList(nn.Linear(hidden, own_vocab) for _ in range(num_heads)) if own_vocab > 0 else None
        self.bias = nn.Parameter(torch.zeros(num_heads, head.size)) if head is not None else None
        self._head = [head]  # a list: the shared head is rebuilt from the target at load, not saved
        self.own_ids: torch.Tensor | None = None  # own heads' columns' target ids after ``restrict``; None: all

    @property
    def shared(self) -> SubHead | None:
        return self._head[0]

    @property
    def arch(self) -> str:
        """The reference's name for this head architecture."""
        return "prefix-mlp" if self.prefix is not None else "mlp"

    def identity_init(self) -> "HydraHeads":
        """Untrained heads that repeat the target's own prediction from ``c`` (tests' ``checkpoint=random``)."""
        for mlp in self.mlps:
            mlp.first.identity_init()
            if mlp.repeated is not None:
                mlp.repeated.identity_init()
        if self.prefix is not None:
            self.prefix.identity_init()
        return self

    def logits(self, k: int, x: torch.Tensor) -> torch.Tensor:
        feats = self.head_dropout(self.mlps[k](x))  # [n, h]
        if self.own is not None:
            return self.own[k](feats)
        return self.shared(feats) + self.bias[k].to(feats.dtype)

    def to_target(self, draft_ids: torch.Tensor) -> torch.Tensor:
        if self.shared is None:
            return draft_ids if self.own_ids is None else self.own_ids[draft_ids]
        return self.shared.to_target(draft_ids)

    def restrict(self, keep: np.ndarray) -> None:
        """Score only the target ids in ``keep`` that the heads score now (FR-Spec's ``vocab=fr:N``): the shared
        head's rows and each head's bias for them, or each own head's rows; ``to_target`` maps back."""
        if self.shared is not None:
            columns = None if self.shared.ids is None else self.shared.ids.cpu().numpy()
            rows = torch.as_tensor(kept_columns(columns, keep))
            self.shared.keep_rows(rows)
            self.bias = nn.Parameter(self.bias.detach()[:, rows.to(self.bias.device)].clone(), requires_grad=False)
            return
        assert self.own is not None
        rows = torch.as_tensor(kept_columns(None, keep), device=self.own[0].weight.device)
        self.own = nn.ModuleList(frozen_rows(head, rows) for head in self.own)
        self.own_ids = rows

    def parameter_count(self) -> int:
        """The heads' own parameters (the shared head's rows are the target's, not counted)."""
        return sum(p.numel() for p in self.parameters())
