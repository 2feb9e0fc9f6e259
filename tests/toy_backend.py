"""A third engine backend, defined only here: it proves a backend is one module plus one ``register_backend`` and
nothing else in specbench changes (``tests/test_backend_contract.py``).

``toy`` runs the transformers module through ``TargetModel`` on a KV cache of its own that keeps the accepted
rows itself (``TrimsRows``), and batches through the engine's batched cache. Its spec declares what it can do;
``toy-single`` is the same forward declaring no batching, to see the refusals come from the spec.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from specbench.engine.backends.batch_cache import BatchedCache
from specbench.engine.backends.contract import BackendSpec, TargetCaps
from specbench.engine.backends.kv_cache import trim_cache
from specbench.engine.backends.target import TargetModel


class ToyCache(DynamicCache):
    """transformers' cache, trimmed by itself: what a backend with a cache of its own declares."""

    trims = 0

    def trim(self, n_ctx: int, rows: list[int]) -> None:
        ToyCache.trims += 1
        plain = DynamicCache.__new__(DynamicCache)
        plain.__dict__ = self.__dict__  # (the same layers: transformers' gather path does the work)
        trim_cache(plain, n_ctx, rows)


@dataclass(frozen=True)
class ToyBackend:
    name: str
    caps: TargetCaps

    @property
    def key(self) -> str:
        return self.name

    def prepare(self, model: torch.nn.Module) -> None:
        return None

    def new_cache(self, model: torch.nn.Module, capacity: int) -> ToyCache:
        return ToyCache(config=model.config)

    def new_batch_cache(self, slots: int, capacity: int) -> BatchedCache:
        return BatchedCache(slots, capacity)

    def target(self, model: torch.nn.Module) -> TargetModel:
        return TargetModel(model)

    def describe(self, model: Any = None) -> dict[str, Any]:
        return {"name": self.name, "kv_cache": "toy"}


def build(name: str, device: torch.device, dtype: torch.dtype, gguf: Any = None, threads: int | None = None) -> ToyBackend:
    return ToyBackend(name, SPECS[name].caps)


SPECS = {
    "toy": BackendSpec("toy", "a test backend", "toy_backend:build", label=lambda d: f"toy ({d.get('kv_cache')})"),
    "toy-single": BackendSpec("toy-single", "a test backend, one sequence at a time", "toy_backend:build",
                              caps=TargetCaps(batching=False), batch_refusal="it keeps one sequence"),
}
