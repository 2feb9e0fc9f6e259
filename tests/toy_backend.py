"""A third engine backend, defined only here: it proves a backend is one module plus one ``register_backend`` and
nothing else in specbench changes (``tests/test_backend_contract.py``).

``toy`` runs the transformers module through ``TargetModel`` on a KV cache of its own that keeps the accepted
rows itself (``TrimsRows``), and batches through the engine's batched cache. Its spec declares what it can do, and
the backend and its target read the caps from the registered spec (the one place they are declared);
``toy-single`` is the same forward declaring no batching, to see the refusals come from the spec. ``build_plain``
gives the same backend a target with the base ``contract.Target`` alone (no batched forward, no skipped layers):
registered with caps that say so it runs one sequence, and with caps claiming more it is refused when its target
is made (``contract.checked_target``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from specbench.engine.backends.batch_cache import BatchedCache
from specbench.engine.backends.contract import BackendSpec, Forward, TargetCaps
from specbench.engine.backends.kv_cache import trim_cache
from specbench.engine.backends.registry import backend_spec
from specbench.engine.backends.target import TargetModel


class ToyCache(DynamicCache):
    """transformers' cache, trimmed by itself: what a backend with a cache of its own declares."""

    trims = 0

    def trim(self, n_ctx: int, rows: list[int]) -> None:
        ToyCache.trims += 1
        plain = DynamicCache.__new__(DynamicCache)
        plain.__dict__ = self.__dict__  # (the same layers: transformers' gather path does the work)
        trim_cache(plain, n_ctx, rows)


class PlainTarget:
    """``contract.Target`` and nothing optional: ``TargetModel``'s single-sequence forward, behind a narrower door."""

    def __init__(self, model: torch.nn.Module, caps: TargetCaps) -> None:
        self._full = TargetModel(model, caps)
        self.device, self.dtype, self.num_layers, self.caps = (self._full.device, self._full.dtype,
                                                               self._full.num_layers, caps)

    def check_layers(self, layers: tuple[int, ...]) -> None:
        self._full.check_layers(layers)

    def scratch_cache(self, capacity: int) -> Any:
        return self._full.scratch_cache(capacity)

    def run(self, input_ids: torch.Tensor, cache: Any, n_ctx: int, *args: Any, **kwargs: Any) -> Forward:
        return self._full.run(input_ids, cache, n_ctx, *args, **kwargs)

    def forward(self, input_ids: torch.Tensor, cache: Any, n_ctx: int, *args: Any,
                **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return self._full.forward(input_ids, cache, n_ctx, *args, **kwargs)


@dataclass(frozen=True)
class ToyBackend:
    name: str
    caps: TargetCaps
    plain: bool = False  # its target a ``PlainTarget``

    @property
    def key(self) -> str:
        return self.name

    def prepare(self, model: torch.nn.Module) -> None:
        return None

    def new_cache(self, model: torch.nn.Module, capacity: int) -> ToyCache:
        return ToyCache(config=model.config)

    def new_batch_cache(self, slots: int, capacity: int) -> BatchedCache:
        return BatchedCache(slots, capacity)

    def target(self, model: torch.nn.Module) -> TargetModel | PlainTarget:
        return PlainTarget(model, self.caps) if self.plain else TargetModel(model, self.caps)

    def describe(self, model: Any = None) -> dict[str, Any]:
        return {"name": self.name, "kv_cache": "toy"}


def build(name: str, device: torch.device, dtype: torch.dtype, gguf: Any = None, threads: int | None = None) -> ToyBackend:
    return ToyBackend(name, backend_spec(name).caps)


def build_plain(name: str, device: torch.device, dtype: torch.dtype, gguf: Any = None,
                threads: int | None = None) -> ToyBackend:
    return ToyBackend(name, backend_spec(name).caps, plain=True)


SPECS = {
    "toy": BackendSpec("toy", "a test backend", "toy_backend:build", label=lambda d: f"toy ({d.get('kv_cache')})"),
    "toy-single": BackendSpec("toy-single", "a test backend, one sequence at a time", "toy_backend:build",
                              caps=TargetCaps(batching=False), batch_refusal="it keeps one sequence"),
    "toy-plain": BackendSpec("toy-plain", "a test backend with the base target alone", "toy_backend:build_plain",
                             caps=TargetCaps(batching=False, skips_layers=False),
                             batch_refusal="its target has no batched forward"),
}
