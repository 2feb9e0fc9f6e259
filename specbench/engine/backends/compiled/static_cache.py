"""The compiled backend's KV cache: buffers of fixed capacity, written in place at positions held in a tensor.

Every layer owns ``[1, kv_heads, capacity, head_dim]`` keys and values, allocated once (zeroed: a masked column
must hold a finite number, or ``0 * NaN`` would poison the softmax) and never resized, so a compiled forward
always sees the same shapes and, on CUDA, the same addresses (CUDA graphs replay on them). A forward of a bucket
of ``b`` rows after ``n_ctx`` cached positions writes its rows at ``n_ctx .. n_ctx + b - 1``: the positions are
the first ``b`` entries of ``write_at``, one tensor all layers share, set in place before the forward
(``place``). Attention reads all ``capacity`` columns; the mask (``target.py``) hides every column past the
context and the step's own rows, so what padding rows wrote there is never read, and the next step overwrites it.

Example (capacity 8): prefill 3 rows (bucket 4) -> rows written at 0..3, ``length`` 3; verify 2 rows (bucket 2)
at 3..4; accept row 1 alone -> ``trim(3, [1])`` gathers column 4 into column 3, ``length`` 4.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers.cache_utils import Cache, CacheLayerMixin


@dataclass(frozen=True)
class LayerShape:
    """One decoder layer's cached tensors, as the model writes them: ``keys [1, heads, n, key_dim]``."""

    heads: int
    key_dim: int
    value_dim: int


def layer_shapes(base: torch.nn.Module) -> list[LayerShape]:
    """Each layer's ``LayerShape``, read from one eager forward of a single token (any architecture: nothing
    is read from its config)."""
    from specbench.engine.backends.kv_cache import full_length_cache

    probe = full_length_cache()
    device = next(base.parameters()).device
    with torch.inference_mode():
        base(input_ids=torch.zeros(1, 1, dtype=torch.long, device=device), past_key_values=probe, use_cache=True)
    return [LayerShape(int(layer.keys.shape[1]), int(layer.keys.shape[-1]), int(layer.values.shape[-1]))
            for layer in probe.layers]


class FixedLayer(CacheLayerMixin):
    """One layer's keys and values in fixed buffers; ``update`` writes at ``write_at`` and returns the buffers."""

    is_compileable = True
    is_sliding = False

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, write_at: torch.Tensor) -> None:
        super().__init__()
        self.keys, self.values, self.write_at = keys, values, write_at
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        raise RuntimeError("a FixedLayer is allocated when its cache is made")  # (never lazily: shapes are fixed)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.write_at[: key_states.shape[-2]]  # [b] (a static slice: b is the bucket)
        self.keys.index_copy_(2, rows, key_states)
        self.values.index_copy_(2, rows, value_states)
        return self.keys, self.values

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return int(self.keys.shape[2]), 0

    def get_seq_length(self) -> int:
        return int(self.keys.shape[2])

    def get_max_length(self) -> int:
        return int(self.keys.shape[2])


class StaticKVCache(Cache):
    """A generation's cache of ``capacity`` positions on ``device``; ``length`` is the positions it holds."""

    def __init__(self, shapes: list[LayerShape], capacity: int, device: torch.device, dtype: torch.dtype) -> None:
        self.capacity = int(capacity)
        self.length = 0
        self._rows = torch.arange(capacity, device=device)
        self.write_at = torch.zeros(capacity, dtype=torch.long, device=device)  # [capacity]: a forward reads [:b]
        layers = [FixedLayer(torch.zeros(1, s.heads, capacity, s.key_dim, dtype=dtype, device=device),
                             torch.zeros(1, s.heads, capacity, s.value_dim, dtype=dtype, device=device),
                             self.write_at) for s in shapes]
        super().__init__(layers=layers)
        if device.type == "cuda":  # CUDA graphs replay on these addresses, mutated in place
            for t in (self.write_at, *(x for layer in layers for x in (layer.keys, layer.values))):
                torch._dynamo.mark_static_address(t)

    def place(self, n_ctx: int, bucket: int) -> None:
        """The next forward (``bucket`` rows) writes at ``n_ctx ..``; one refusal when it would not fit."""
        if n_ctx + bucket > self.capacity:
            raise ValueError(f"a forward of {bucket} rows after {n_ctx} positions overflows the static cache of "
                             f"{self.capacity}")
        torch.add(self._rows, n_ctx, out=self.write_at)

    def trim(self, n_ctx: int, rows: list[int]) -> None:
        """Keep positions ``[0, n_ctx)`` and the verified rows ``n_ctx + rows`` in that order (``TrimsRows``)."""
        k = len(rows)
        if rows != list(range(k)):
            index = torch.tensor([n_ctx + r for r in rows], dtype=torch.long, device=self.write_at.device)
            for layer in self.layers:  # (index_select copies first: an overlapping write is safe)
                layer.keys[:, :, n_ctx:n_ctx + k] = layer.keys.index_select(2, index)
                layer.values[:, :, n_ctx:n_ctx + k] = layer.values.index_select(2, index)
        self.length = n_ctx + k

    def reset(self) -> None:
        """Empty again for the next generation (the buffers are kept: the masks hide what they hold)."""
        self.length = 0

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length
