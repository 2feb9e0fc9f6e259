"""How the target's forward is executed: the torch backends and ``resolve_backend`` (the names: ``registry.py``).

- ``reference``: the transformers module exactly as loaded, with transformers' ``DynamicCache`` (every layer
  keeping every position, ``kv_cache.full_length_cache``). The yardstick every other backend is compared with
  (``tests/test_backends.py``).
- ``fast``: the engine's preallocated KV cache (no per-step concatenation) and, on CPU in a dtype
  oneDNN supports, every linear layer (LM head included) through oneDNN-packed weights with sibling
  projections fused (``packed_linear.py``). On other devices it is the preallocated cache alone.
- ``auto``: ``fast`` (the fastest backend that stays lossless on every device tested; see
  ``docs/measurements.md``).
- ``llamacpp``: the forward on llama.cpp, running a GGUF file (``llamacpp/``; the optional extra
  ``specbench[llamacpp]``). It needs the file: ``resolve_backend("llamacpp", ..., gguf=GgufModel)``.

The decode loop does not know which backend runs: it asks the backend for a cache, and the backend
has put the model in the state it needs. A model is in one backend's state at a time; the engine
re-applies its backend before each generation, so engines on different backends may share a model.

Example: ``Engine(model, stops, backend="reference")`` reproduces plain transformers decoding;
``resolve_backend("auto", torch.device("cpu"), torch.float32).describe(model)`` ->
``{"name": "fast", "kv_cache": "preallocated", "linear": "onednn-packed", "packed_linears": 121, ...}``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from specbench.engine.backends.registry import backend_choices, backend_spec
from specbench.engine.backends.batch_cache import BatchedCache
from specbench.engine.backends.contract import TargetCaps
from specbench.engine.backends.kv_cache import PreallocatedCache, full_length_cache
from specbench.engine.backends.packed_linear import describe as describe_packing
from specbench.engine.backends.packed_linear import is_packed, pack_linears, packing_supported, unpack_linears
from specbench.engine.backends.target import TargetModel

STATE_ATTR = "_specbench_backend"  # (a backend's state of the shared model: compiled/backend.py reads it too)


@dataclass(frozen=True)
class TorchBackend:
    """A resolved torch backend (``reference``, ``fast``): its name and whether linears are packed on this
    device/dtype."""

    name: str
    packed: bool

    @property
    def caps(self) -> TargetCaps:
        """What its target can do, as its spec declares (``registry.py``): batching, intermediate layers, tree
        masks, skipped layers; a prompt's states come for free."""
        return backend_spec(self.name).caps

    def prepare(self, model: torch.nn.Module) -> None:
        """Put ``model`` in this backend's state (idempotent, cheap when already there)."""
        state = (self.name, self.packed)
        if getattr(model, STATE_ATTR, None) == state:
            return  # the common case, once per generation: no walk over the modules
        if self.packed:
            pack_linears(model)
        elif is_packed(model):
            unpack_linears(model)
        setattr(model, STATE_ATTR, state)

    def new_cache(self, model: torch.nn.Module, capacity: int) -> Any:
        """An empty KV cache for one generation of up to about ``capacity`` positions."""
        if self.name == "reference":
            return full_length_cache()
        return PreallocatedCache(capacity)

    def new_batch_cache(self, slots: int, capacity: int) -> BatchedCache:
        """An empty KV cache for ``slots`` sequences decoded side by side (``batch_loop.py``)."""
        return BatchedCache(slots, capacity)

    @property
    def key(self) -> str:
        """What distinguishes its cost profile from another backend's (``cost_profile.py``)."""
        return self.name

    def target(self, model: torch.nn.Module) -> TargetModel:
        """The forward the engine runs: the transformers module through ``TargetModel``, with this backend's caps."""
        return TargetModel(model, self.caps)

    def describe(self, model: torch.nn.Module | None = None) -> dict[str, Any]:
        """What the manifest and reports record about the backend."""
        info: dict[str, Any] = {
            "name": self.name,
            "kv_cache": "dynamic (transformers)" if self.name == "reference" else "preallocated",
            "linear": "onednn-packed, fused siblings" if self.packed else "torch (as loaded)",
        }
        if model is not None and self.packed:
            info.update(describe_packing(model))
        return info


def torch_backend(name: str, device: torch.device, dtype: torch.dtype, gguf: Any = None,
                  threads: int | None = None) -> TorchBackend:
    """``reference`` or ``fast`` (the registry's factory for both): linears packed where ``fast`` supports it."""
    return TorchBackend(name, packed=name == "fast" and packing_supported(device, dtype))


def resolve_backend(name: str, device: torch.device, dtype: torch.dtype, gguf: Any = None,
                    threads: int | None = None) -> Any:
    """The backend ``name`` (``auto`` or a registered one: ``reference``, ``fast``, ``llamacpp``, ...) on ``device``
    in ``dtype``; ``llamacpp`` runs ``gguf`` (a ``engine.backends.llamacpp.gguf_files.GgufModel``) on ``threads`` threads."""
    spec = backend_spec(name)
    if spec is None:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(backend_choices())}")
    return spec.create(device, dtype, gguf, threads)


def backend_for(name: str, loaded: Any, threads: int | None = None) -> Any:
    """The backend ``name`` for a ``models.loading.LoadedModel``: its device and dtype, and the GGUF it was loaded
    with (``llamacpp``'s file). ``threads``: llama.cpp's threads, or torch's (process-wide) on the other backends."""
    param = next(loaded.model.parameters())
    spec = backend_spec(name)
    if threads and (spec is None or spec.torch_forward):
        torch.set_num_threads(threads)
    return resolve_backend(name, param.device, param.dtype, gguf=getattr(loaded, "gguf", None), threads=threads)
