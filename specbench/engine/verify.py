"""One forward pass over ``[t0] + tree`` and greedy acceptance of the longest matching path."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from transformers import DynamicCache

from specbench.engine.tree import CompiledTree


@dataclass
class Verification:
    """Outcome of verifying one compiled tree."""

    rows: list[int]  # accepted query rows, starting with row 0 (the root)
    accepted: list[int]  # accepted draft tokens (root excluded)
    bonus: int  # the model's greedy token after the last accepted row
    hidden: torch.Tensor  # [n, hidden] final-norm hidden states of all rows
    aux_predictions: list[int] | None = None  # the model's greedy token at each auxiliary row
    token_logprobs: list[float] | None = None  # sampling only: target log-prob of each accepted token and the bonus

    def capped(self, depth: int | None) -> "Verification":
        """This outcome with at most ``depth`` accepted draft tokens (``Proposal.accept_depth``).

        The accepted token at ``depth`` becomes the bonus: it is the target's own choice at that row
        (greedy: its argmax; sampled: a token the rejection rule accepted), so the output stays exact.
        Example: accepted ``[4, 5, 6]``, bonus ``7``, ``capped(2)`` -> accepted ``[4, 5]``, bonus ``6``.
        """
        if depth is None or len(self.accepted) <= depth:
            return self
        return Verification(
            rows=self.rows[: depth + 1],
            accepted=self.accepted[:depth],
            bonus=self.accepted[depth],
            hidden=self.hidden,
            aux_predictions=self.aux_predictions,
            token_logprobs=None if self.token_logprobs is None else self.token_logprobs[: depth + 1],
        )


class Forward(NamedTuple):
    """One forward's outputs: final-norm hidden states, logits and, when asked, chosen layers' hidden states."""

    hidden: torch.Tensor  # [n, h]
    logits: torch.Tensor  # [n, V] ([1, V] with last_logits_only)
    layer_states: torch.Tensor | None = None  # [n, len(layers), h]


class TargetModel:
    """Runs a Hugging Face causal LM as ``base model -> hidden states -> output head``.

    Splitting the head off gives drafters the final-norm hidden state for free. Works for any
    causal LM whose forward accepts a 4D additive attention mask and ``position_ids``.

    Layer indices (``run(..., layers=...)``) follow transformers' ``hidden_states``: 0 is the embedding
    output, ``i`` in ``1..L-1`` the input of decoder layer ``i`` (the output of layer ``i - 1``) and ``L``
    (``num_layers``) the final-norm state. Example: a 30-layer model, ``layers=(2, 15, 27)`` -> ``[n, 3, h]``
    holding the inputs of layers 2, 15 and 27 (EAGLE-3's low, middle and high features).
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.base = model.base_model
        self.head = model.get_output_embeddings()
        if self.head is None:
            raise TypeError(f"{type(model).__name__} has no output embeddings (not a causal LM?)")
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self._min = torch.finfo(self.dtype).min
        cfg = model.config
        self.num_layers = int(getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", 0))

    def scratch_cache(self, capacity: int) -> object:
        """An empty cache for a one-off forward outside a generation (``margins.margin_at``)."""
        return DynamicCache(config=self.model.config)

    def check_layers(self, layers: tuple[int, ...]) -> None:
        """One-line ``ValueError`` unless every index is in ``0..num_layers``."""
        bad = [i for i in layers if not 0 <= i <= self.num_layers]
        if bad:
            raise ValueError(f"layer indices {bad} out of range: this target has hidden states 0..{self.num_layers}")

    def forward(
        self,
        input_ids: torch.Tensor,  # [1, n]
        cache: object,
        n_ctx: int,
        position_offsets: torch.Tensor | None = None,  # [n]
        ancestor_mask: torch.Tensor | None = None,  # [n, n] bool
        last_logits_only: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run ``input_ids`` after ``n_ctx`` cached positions; returns (hidden [n, h], logits [n, V]).

        ``last_logits_only`` (prefill): the output head runs on the last row alone, logits ``[1, V]``;
        hidden states are still returned for every row.
        """
        out = self.run(input_ids, cache, n_ctx, position_offsets, ancestor_mask, last_logits_only)
        return out.hidden, out.logits

    def run(
        self,
        input_ids: torch.Tensor,  # [1, n]
        cache: object,
        n_ctx: int,
        position_offsets: torch.Tensor | None = None,  # [n]
        ancestor_mask: torch.Tensor | None = None,  # [n, n] bool
        last_logits_only: bool = False,
        layers: tuple[int, ...] = (),
        hidden: bool = True,
    ) -> Forward:
        """``forward``, plus the hidden states of ``layers`` (indices as in the class docstring) when any are
        asked; with none, the model runs exactly as ``forward`` (no intermediate states are collected).
        ``hidden`` (whether a drafter reads the final-norm states) changes nothing here, where they come
        for free; the llama.cpp backend skips them when False."""
        n = input_ids.shape[1]
        mask = None
        if ancestor_mask is not None:
            mask = torch.zeros(1, 1, n, n_ctx + n, dtype=self.dtype, device=self.device)
            mask[0, 0, :, n_ctx:].masked_fill_(~ancestor_mask, self._min)
        positions = None
        if position_offsets is not None:
            positions = (position_offsets + n_ctx).unsqueeze(0)
        extra = {"output_hidden_states": True} if layers else {}  # transformers keeps every layer's state then
        out = self.base(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            **extra,
        )
        hidden = out.last_hidden_state[0]
        states = torch.stack([out.hidden_states[i][0] for i in layers], 1) if layers else None  # [n, m, h]
        return Forward(hidden, self.head(hidden[-1:] if last_logits_only else hidden), states)

    def forward_batch(self, input_ids: torch.Tensor, cache: object, positions: torch.Tensor,
                      mask: torch.Tensor) -> torch.Tensor:
        """Hidden states ``[A, n, h]`` of a batched forward (tensors from ``batch_inputs.py``); the output
        head runs afterwards on the rows that need logits only (a padding row needs none)."""
        return self.run_batch(input_ids, cache, positions, mask)[0]

    def run_batch(self, input_ids: torch.Tensor, cache: object, positions: torch.Tensor, mask: torch.Tensor,
                  layers: tuple[int, ...] = ()) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``forward_batch``'s hidden states ``[A, n, h]`` and, when ``layers`` are asked, their states
        ``[A, n, len(layers), h]`` (indices as in the class docstring); None, and nothing collected, without.

        Example: two slots of 5 rows, ``layers=(1, 3)`` -> ``([2, 5, h], [2, 5, 2, h])``.
        """
        extra = {"output_hidden_states": True} if layers else {}
        out = self.base(input_ids=input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                        use_cache=True, **extra)
        states = torch.stack([out.hidden_states[i] for i in layers], 2) if layers else None  # [A, n, m, h]
        return out.last_hidden_state, states


def accept_greedy(compiled: CompiledTree, logits: torch.Tensor, hidden: torch.Tensor) -> Verification:
    """Follow the model's argmax from the root down the tree while a child matches it."""
    pred = logits.argmax(dim=-1).tolist()  # [n]; the only host sync of the step (auxiliary rows included)
    row = 0
    rows = [0]
    while True:
        nxt = compiled.children[row].get(pred[row])
        if nxt is None:
            break
        rows.append(nxt)
        row = nxt
    accepted = [pred[r] for r in rows[:-1]]  # child tokens equal the parent's argmax
    aux = None if compiled.aux_start is None else pred[compiled.aux_start :]
    return Verification(rows=rows, accepted=accepted, bonus=pred[row], hidden=hidden, aux_predictions=aux)
