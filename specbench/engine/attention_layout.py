"""Which keys each kind of attention layer may see, from positions: the masks that keep tree verification exact on
models with sliding-window, interleaved local/global or chunked attention.

transformers uses a prepared 4D mask as it is, on every layer: a sliding-window layer given the engine's tree
mask sees the whole context, past its window, and so computes what plain decoding never does (on a real model
with window 512 every tree method gave MISMATCH on prompts longer than 512 tokens, chains did not: a chain passes
no mask, so the library built its own). So the engine builds the mask of each layer kind itself, from the
positions of the query rows and of the keys, with the library's own rule (``transformers.masking_utils``):

- ``full_attention``: what the tree allows (the context, and the row's ancestors);
- ``sliding_attention`` (window ``w``): that, and ``q - k < w`` (``sliding_window_overlay``: ``kv > q - w``);
- ``chunked_attention`` (chunk ``c``): that, and ``q // c == k // c`` (``chunked_overlay``, no padding).

A model whose layers are all one kind takes that kind's mask as one tensor; one mixing kinds takes a dict keyed by
layer type (transformers' convention for a config with ``layer_types``, what ``generate`` hands such models).
Layers no mask can make exact (recurrent or linear attention, GPT-Neo's local attention, which windows by cache
index) are refused by ``attention_layout`` in one line naming the layout, before anything runs.

The cache must hold every position for this (``kv_cache.full_length_cache``: a sliding layer of transformers'
own cache keeps only its window, which the engine's trims and masks address by full-length columns).

Example: window 4, context of 6 (positions 0-5), a root at position 6 and its child at 7: the child's sliding
mask sees positions 4, 5, 6, 7 (``7 - k < 4``); its full-attention mask sees 0-7.

>>> layout = AttentionLayout(("sliding_attention", "full_attention"), window=4)
>>> layout.name, layout.windowed
('sliding-window (4) interleaved with full attention', True)
>>> q = torch.tensor([[6, 7]]); k = torch.arange(8)[None]
>>> allowed = torch.ones(1, 2, 8, dtype=torch.bool).tril(6)
>>> layout.allowed("sliding_attention", allowed, q, k)[0].int().tolist()
[[0, 0, 0, 1, 1, 1, 1, 0], [0, 0, 0, 0, 1, 1, 1, 1]]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import torch

from specbench.errors import ConfigError

FULL, SLIDING, CHUNKED = "full_attention", "sliding_attention", "chunked_attention"
KINDS = (FULL, SLIDING, CHUNKED)
Masks = Union[torch.Tensor, dict[str, torch.Tensor]]  # what a transformers model takes as ``attention_mask``


class LayoutRefused(ConfigError):
    """A model whose attention layout tree verification cannot make exact (one line from the CLI, exit 2)."""


@dataclass(frozen=True)
class AttentionLayout:
    """The attention kind of each decoder layer, the sliding layers' window and the chunked layers' chunk size."""

    kinds: tuple[str, ...]
    window: int | None = None
    chunk: int | None = None

    @property
    def windowed(self) -> bool:
        """Whether some layer sees less than the whole context (then the masks differ per kind)."""
        return any(k != FULL for k in self.kinds)

    @property
    def name(self) -> str:
        """The layout in words: ``"sliding-window (4096)"``, ``"chunked (8192) interleaved with full attention"``."""
        words = {SLIDING: f"sliding-window ({self.window})", CHUNKED: f"chunked ({self.chunk})"}
        local = " / ".join(words[k] for k in (SLIDING, CHUNKED) if k in self.kinds)
        if not local:
            return "full attention"
        return f"{local} interleaved with full attention" if FULL in self.kinds else local

    def allowed(self, kind: str, allowed: torch.Tensor, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        """``allowed`` ([A, n, cols] bool) cut to what a ``kind`` layer sees, for query rows at ``q_pos`` ([A, n])
        and keys at ``k_pos`` ([A, cols])."""
        if kind == FULL:
            return allowed
        q, k = q_pos[:, :, None], k_pos[:, None, :]
        if kind == SLIDING:
            return allowed & (q - k < self.window)
        return allowed & (torch.div(q, self.chunk, rounding_mode="floor") == torch.div(k, self.chunk, rounding_mode="floor"))

    def masks(self, allowed: torch.Tensor, q_pos: torch.Tensor, k_pos: torch.Tensor, dtype: torch.dtype) -> Masks:
        """The additive ``[A, 1, n, cols]`` mask of each kind present: one tensor when every layer is one kind, else
        a dict keyed by layer type (shapes as ``allowed``)."""
        present = [k for k in KINDS if k in self.kinds]
        out = {kind: additive(self.allowed(kind, allowed, q_pos, k_pos), dtype) for kind in present}
        return out[present[0]] if len(out) == 1 else out


def key_positions(columns: int, q_pos: torch.Tensor) -> torch.Tensor:
    """``[1, columns]``: the position of each key column when the last ``n`` columns are the rows a forward
    writes (at ``q_pos`` [1, n]) and every column before them holds the position equal to its index (the cache
    keeps the context's positions in order, ``kv_cache.trim_cache``).

    >>> key_positions(5, torch.tensor([[3, 4, 4]])).tolist()
    [[0, 1, 3, 4, 4]]
    """
    k = torch.arange(columns, device=q_pos.device)[None].clone()
    k[:, columns - q_pos.shape[1]:] = q_pos
    return k


def additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``[A, 1, n, cols]`` of 0 where ``allowed`` ([A, n, cols]) and ``dtype``'s minimum elsewhere."""
    mask = torch.zeros(allowed.shape[0], 1, *allowed.shape[1:], dtype=dtype, device=allowed.device)
    return mask.masked_fill_(~allowed[:, None], torch.finfo(dtype).min)


def attention_layout(config: Any) -> AttentionLayout:
    """The layout of a transformers config (its text config for a composite model), read as transformers' own
    cache reads it (``cache_utils.get_layer_types_and_kwargs``): ``layer_types`` when the config declares them,
    else every layer sliding when ``sliding_window`` is set (Mistral), chunked when ``attention_chunk_size`` is,
    full otherwise. ``LayoutRefused`` for a layout tree verification cannot make exact.

    >>> attention_layout(type("C", (), {"num_hidden_layers": 2, "sliding_window": 16})()).name
    'sliding-window (16)'
    """
    get_text = getattr(config, "get_text_config", None)
    cfg = get_text(decoder=True) if callable(get_text) else config
    layers = int(getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", 0) or 0)
    window, chunk = getattr(cfg, "sliding_window", None), getattr(cfg, "attention_chunk_size", None)
    local = [i for i, kind in enumerate(getattr(cfg, "attention_layers", None) or ()) if kind == "local"]
    if local:  # GPT-Neo: its local layers window by cache index inside the attention module, past any mask
        raise LayoutRefused(f"this model's local attention layers (GPT-Neo style, window {getattr(cfg, 'window_size', '?')}"
                            ", layers " + ", ".join(map(str, local)) + ") mask by cache position, which no tree mask "
                            "overrides: tree verification cannot be exact on it; use a model with full or "
                            "sliding-window attention")
    types = getattr(cfg, "layer_types", None)
    if types is None:
        kind = SLIDING if window is not None else CHUNKED if chunk is not None else FULL
        types = [kind] * max(layers, 1)
    types = tuple(str(t) for t in types)
    unknown = sorted(set(types) - set(KINDS))
    if unknown:
        raise LayoutRefused(f"this model has {', '.join(unknown)} layers ({sum(t in unknown for t in types)} of "
                            f"{len(types)}): tree verification can be exact only on full, sliding-window and chunked "
                            "attention layers")
    if SLIDING in types and not _positive(window):
        raise LayoutRefused(f"this model has sliding-window layers but no window (sliding_window={window!r})")
    if CHUNKED in types and not _positive(chunk):
        raise LayoutRefused(f"this model has chunked attention layers but no chunk size (attention_chunk_size={chunk!r})")
    return AttentionLayout(types, int(window) if SLIDING in types else None, int(chunk) if CHUNKED in types else None)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
