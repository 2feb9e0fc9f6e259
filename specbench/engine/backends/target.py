"""The torch backends' target: a Hugging Face causal LM run as ``base model -> hidden states -> output head``
(``TargetModel``), the forward the decode loop verifies drafts with (``contract.Target``; it is also a
``BatchedTarget`` and a ``SkippingTarget``, and its backend spec's caps, ``TargetCaps``, say so)."""
from __future__ import annotations

import torch

from specbench.engine.attention_layout import Masks, additive, attention_layout, key_positions
from specbench.engine.backends.contract import Forward, TargetCaps
from specbench.engine.backends.kv_cache import full_length_cache
from specbench.engine.backends.layer_skip import SkipSet, skipping


class TargetModel:
    """Runs a Hugging Face causal LM as ``base model -> hidden states -> output head``.

    Splitting the head off gives drafters the final-norm hidden state for free. Works for any
    causal LM whose forward accepts a 4D additive attention mask and ``position_ids``; on a model with
    sliding-window or chunked layers each layer kind gets its own mask (``attention_layout.py``), and a layout
    no mask makes exact is refused here, in one line (``attention_layout.LayoutRefused``).

    Layer indices (``run(..., layers=...)``) follow transformers' ``hidden_states``: 0 is the embedding
    output, ``i`` in ``1..L-1`` the input of decoder layer ``i`` (the output of layer ``i - 1``) and ``L``
    (``num_layers``) the final-norm state. Example: a 30-layer model, ``layers=(2, 15, 27)`` -> ``[n, 3, h]``
    holding the inputs of layers 2, 15 and 27 (EAGLE-3's low, middle and high features).
    """

    def __init__(self, model: torch.nn.Module, caps: TargetCaps = TargetCaps()) -> None:
        """``caps``: its backend spec's (``TorchBackend.target``); a bare ``TargetModel`` (the profilers, the
        tests) can do everything a torch target can: batching, intermediate layers, tree masks, skipped layers."""
        self.model = model
        self.caps = caps
        self.base = model.base_model
        self.head = model.get_output_embeddings()
        if self.head is None:
            raise TypeError(f"{type(model).__name__} has no output embeddings (not a causal LM?)")
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self._min = torch.finfo(self.dtype).min
        cfg = model.config
        self.num_layers = int(getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", 0))
        self.layout = attention_layout(cfg)

    def scratch_cache(self, capacity: int) -> object:
        """An empty cache for a one-off forward outside a generation (``margins.margin_at``)."""
        return full_length_cache()

    def _masks(self, allowed: torch.Tensor, positions: torch.Tensor) -> Masks:
        """The masks of one sequence's forward: ``allowed`` [n, columns] (bool), the rows at ``positions`` [1, n]
        written in the last ``n`` columns; one tensor ``[1, 1, n, columns]``, or one per layer kind."""
        if not self.layout.windowed:
            return additive(allowed[None], self.dtype)
        keys = key_positions(allowed.shape[1], positions)
        return self.layout.masks(allowed[None], positions, keys, self.dtype)

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
        out = self.run(input_ids, cache, n_ctx, position_offsets, ancestor_mask, last_logits_only=last_logits_only)
        return out.hidden, out.logits

    def run(
        self,
        input_ids: torch.Tensor,  # [1, n]
        cache: object,
        n_ctx: int,
        position_offsets: torch.Tensor | None = None,  # [n]
        ancestor_mask: torch.Tensor | None = None,  # [n, n] bool
        *,
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
        positions = None
        if position_offsets is not None:
            positions = (position_offsets + n_ctx).unsqueeze(0)
        if ancestor_mask is not None and not self.layout.windowed:
            mask = torch.zeros(1, 1, n, n_ctx + n, dtype=self.dtype, device=self.device)
            mask[0, 0, :, n_ctx:].masked_fill_(~ancestor_mask, self._min)
        elif ancestor_mask is not None:  # (a chain passes none: the library's own masks are plain decoding's)
            allowed = torch.ones(n, n_ctx + n, dtype=torch.bool, device=self.device)
            allowed[:, n_ctx:] = ancestor_mask
            at = positions if positions is not None else n_ctx + torch.arange(n, device=self.device)[None]
            mask = self._masks(allowed, at)
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

    def run_skipping(self, input_ids: torch.Tensor, cache: object, positions: torch.Tensor, visible: torch.Tensor,
                     skip: SkipSet) -> torch.Tensor:
        """Logits ``[n, V]`` of ``input_ids`` ``[1, n]`` at ``positions`` ``[n]`` with the sub-layers of ``skip``
        skipped (``layer_skip.py``). ``visible`` ``[n, columns]`` (bool): which of the columns each row attends to,
        the ``columns - n`` a kept layer holds before the forward and the ``n`` it writes (``self_draft.py`` builds
        both and keeps the cache consistent). Example: 3 cached columns, 2 new rows, causal: ``visible`` =
        ``[[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]``."""
        mask = self._masks(visible, positions[None])
        with skipping(self.model, skip):
            out = self.base(input_ids=input_ids, attention_mask=mask, position_ids=positions.unsqueeze(0),
                            past_key_values=cache, use_cache=True)
        return self.head(out.last_hidden_state[0])

    def forward_batch(self, input_ids: torch.Tensor, cache: object, positions: torch.Tensor,
                      mask: Masks) -> torch.Tensor:
        """Hidden states ``[A, n, h]`` of a batched forward (tensors from ``batch_inputs.py``); the output
        head runs afterwards on the rows that need logits only (a padding row needs none)."""
        return self.run_batch(input_ids, cache, positions, mask)[0]

    def run_batch(self, input_ids: torch.Tensor, cache: object, positions: torch.Tensor, mask: Masks,
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
