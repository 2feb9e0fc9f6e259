"""KV-cache trimming after verification: keep the context plus the accepted path, drop the rest.

The engine's own :class:`~specbench.engine.kv_cache.PreallocatedCache` trims in place; the reference
backend's transformers ``DynamicCache`` is trimmed here by slicing its per-layer tensors.
"""
from __future__ import annotations

import torch

from specbench.engine.kv_cache import PreallocatedCache


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
    if isinstance(cache, PreallocatedCache):
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
