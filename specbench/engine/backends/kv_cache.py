"""A preallocated KV cache: keys/values written in place, trimmed by length or by an in-place gather.

transformers' ``DynamicCache`` concatenates every layer's keys and values at every step, an O(context)
copy per forward that grows with the answer. Here each layer owns one buffer per tensor
(``[batch, kv_heads, capacity, head_dim]``); a forward writes its new rows at ``length`` and attention
reads the view ``buffer[:, :, :length]``. Capacity grows geometrically (x2) when a forward would overflow,
so a generation pays at most ``log2(final / initial)`` copies.

Example (one layer, capacity 4): prefill 3 rows -> length 3; verify 3 rows -> grows to 8, length 6;
accept rows 0 and 2 of that pass -> ``trim(3, [0, 2])`` gathers row 5 into slot 4, length 5.

``trim_cache`` trims either kind after verification (keep the context plus the accepted path): this
cache in place, the reference backend's transformers ``DynamicCache`` by slicing its per-layer tensors.

Every layer of either keeps every position, a sliding-window layer too (``full_length_cache``): the engine
addresses the cache by full-length columns and the masks do the windowing (``attention_layout.py``).
"""
from __future__ import annotations

import functools
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, CacheLayerMixin

from specbench.engine.backends.contract import TrimsRows

DEFAULT_CAPACITY = 256


class PreallocatedLayer(CacheLayerMixin):
    """One decoder layer's keys and values in a growable, in-place buffer."""

    is_compileable = False
    is_croppable = True
    is_sliding = False

    def __init__(self, capacity: int = DEFAULT_CAPACITY, **kwargs: Any) -> None:
        super().__init__()
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = int(capacity)
        self.length = 0
        self._k: torch.Tensor | None = None  # [batch, kv_heads, capacity, head_dim]
        self._v: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        b, h, _, d = key_states.shape
        self._k = key_states.new_empty(b, h, self.capacity, d)
        self._v = value_states.new_empty(b, h, self.capacity, value_states.shape[-1])
        self.is_initialized = True

    def _reserve(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        cap = self.capacity
        while cap < needed:
            cap *= 2
        assert self._k is not None and self._v is not None
        k = self._k.new_empty(*self._k.shape[:2], cap, self._k.shape[-1])
        v = self._v.new_empty(*self._v.shape[:2], cap, self._v.shape[-1])
        k[:, :, : self.length] = self._k[:, :, : self.length]
        v[:, :, : self.length] = self._v[:, :, : self.length]
        self._k, self._v, self.capacity = k, v, cap

    def _publish(self) -> None:
        assert self._k is not None and self._v is not None
        self.keys = self._k[:, :, : self.length]
        self.values = self._v[:, :, : self.length]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new rows after the cached ones; return views of all rows for attention."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start, end = self.length, self.length + key_states.shape[-2]
        self._reserve(end)
        assert self._k is not None and self._v is not None
        self._k[:, :, start:end].copy_(key_states)
        self._v[:, :, start:end].copy_(value_states)
        self.length = end
        self._publish()
        return self.keys, self.values

    def trim(self, n_ctx: int, rows: torch.Tensor | None, k: int) -> None:
        """Keep positions ``[0, n_ctx)`` plus ``n_ctx + rows`` (``rows=None``: the prefix ``0..k-1``)."""
        if not self.is_initialized:
            return
        if rows is not None:
            assert self._k is not None and self._v is not None
            # index_select copies the source rows first, so an overlapping destination is safe
            self._k[:, :, n_ctx : n_ctx + k] = self._k.index_select(2, rows)
            self._v[:, :, n_ctx : n_ctx + k] = self._v.index_select(2, rows)
        self.length = n_ctx + k
        self._publish()

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.length + query_length, 0

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1

    def crop(self, tokens_to_remove: int) -> None:
        """transformers' convention: a negative count drops that many trailing positions."""
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative number of positions to remove")
        if tokens_to_remove and self.is_initialized:
            self.length = max(0, self.length + tokens_to_remove)
            self._publish()

    def reset(self) -> None:
        self.length = 0
        if self.is_initialized:
            self._publish()


class PreallocatedCache(Cache):
    """A ``Cache`` of :class:`PreallocatedLayer`, one per decoder layer (created lazily on first use).

    ``capacity`` is the initial number of positions per layer; size it from prompt + max new tokens +
    the largest draft to avoid any growth, or leave the default and let it double as needed.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = int(capacity)
        # a partial, not a bound method of self: the cache holding its own method is a reference cycle, so a
        # finished generation's buffers (~380 MB at 8k tokens on the embedded model) would wait for the
        # cyclic GC instead of being freed when the generation drops its cache
        super().__init__(layer_class_to_replicate=functools.partial(PreallocatedLayer, self._capacity))

    def trim(self, n_ctx: int, rows: list[int]) -> None:
        """Keep cache positions ``[0, n_ctx)`` and the verified rows ``n_ctx + rows``, in that order.

        ``rows`` index the tokens of the last forward pass (row 0 = the root). A prefix ``0..k-1`` is a
        length change; any other selection is gathered into place on the cache's own device.
        """
        k = len(rows)
        index = None
        if rows != list(range(k)):
            device = next((layer.device for layer in self.layers if layer.is_initialized), None)
            # built once per step straight on the cache's device (one small copy, not one per layer)
            index = torch.tensor([r + n_ctx for r in rows], dtype=torch.long, device=device)
        for layer in self.layers:
            layer.trim(n_ctx, index, k)

    @property
    def capacity(self) -> int:
        """Current capacity of the first layer (all layers grow together)."""
        return self.layers[0].capacity if self.layers else self._capacity


def full_length_cache() -> DynamicCache:
    """transformers' ``DynamicCache`` with every layer keeping every position (its ``DynamicLayer``), whatever the
    model's layout. Built from a config it would give a sliding-window layer a ``DynamicSlidingWindowLayer``, which
    keeps only its last ``window - 1`` positions: the engine's trim (``trim_cache``, by full-length column) and its
    masks (one column per position) would then address the wrong rows, or a tensor of another size."""
    return DynamicCache()


def cache_layers(cache: object) -> list:
    """The per-layer key/value holders of a transformers ``Cache``; a clear error for other kinds."""
    layers = getattr(cache, "layers", None)
    if layers is None or any(not hasattr(layer, "keys") for layer in layers):
        raise TypeError(f"unsupported KV cache type {type(cache).__name__}: need a transformers Cache")
    return layers


def trim_cache(cache: object, n_ctx: int, rows: list[int]) -> None:
    """Keep cache positions ``[0, n_ctx)`` and the verified rows ``n_ctx + rows`` (in that order).

    ``rows`` index the tokens of the last forward pass (row 0 = the root). When the accepted rows are
    a prefix ``0..k`` this is a plain crop; otherwise the accepted entries are gathered into place.
    """
    if isinstance(cache, TrimsRows):  # (preallocated, and llama.cpp's: it frees the other sequences' cells)
        cache.trim(n_ctx, rows)
        return
    k = len(rows)
    contiguous = rows == list(range(k))
    index: torch.Tensor | None = None
    for layer in cache_layers(cache):
        if layer.keys is None or layer.keys.numel() == 0:
            continue
        if not contiguous:
            if index is None or index.device != layer.keys.device:  # once per step, not per layer
                index = torch.tensor([r + n_ctx for r in rows], dtype=torch.long, device=layer.keys.device)
            # advanced indexing on the right copies first, so the overlapping write is safe
            layer.keys[:, :, n_ctx : n_ctx + k] = layer.keys[:, :, index]
            layer.values[:, :, n_ctx : n_ctx + k] = layer.values[:, :, index]
        layer.keys = layer.keys[:, :, : n_ctx + k]
        layer.values = layer.values[:, :, : n_ctx + k]


def cache_length(cache: object) -> int:
    """Number of positions held in the cache."""
    return int(cache.get_seq_length())  # type: ignore[attr-defined]
