"""Engine backends by name: the built-in ``reference``, ``fast``, ``llamacpp`` and ``compiled``, and any a plugin
registers.

A new backend is one package and one ``register_backend(BackendSpec(...))`` (``contract.py`` says what the spec
declares); its spec's ``caps`` declare its optional abilities, the one place they are declared, and they are
checked when its target is made (``contract.checked_target``). The run configuration, ``--help``, reports and the
profiler ask the spec instead of testing names. ``auto`` is ``fast``'s spec (the fastest lossless backend).

>>> backend_spec("llamacpp").caps.batching, backend_spec("llamacpp").batch_refusal
(False, 'the batched loop keeps its own padded KV cache')
>>> backend_names()[:3], backend_spec("auto").name
(('reference', 'fast', 'llamacpp'), 'fast')
"""
from __future__ import annotations

import importlib
from typing import Any

from specbench.engine.backends.contract import BackendSpec, TargetCaps
from specbench.engine.backends.compiled.spec import COMPILED
from specbench.engine.backends.llamacpp.spec import LLAMACPP

DEFAULT_BACKEND = "auto"
AUTO_MEANS = "fast"  # the fastest backend that stays lossless on every device tested (docs/measurements.md)
_TORCH = "specbench.engine.backends.torch_backends:torch_backend"

_SPECS: dict[str, BackendSpec] = {}


def register_backend(spec: BackendSpec) -> BackendSpec:
    """Make ``spec.name`` a ``--backend`` choice; one-line ``ValueError`` for a name taken."""
    if spec.name in _SPECS or spec.name == DEFAULT_BACKEND:
        raise ValueError(f"backend {spec.name!r} is already registered")
    _SPECS[spec.name] = spec
    return spec


def backend_names() -> tuple[str, ...]:
    """The registered backends, in registration order."""
    return tuple(_SPECS)


def backend_choices() -> tuple[str, ...]:
    """What ``--backend`` takes: ``auto`` and every registered name."""
    return (DEFAULT_BACKEND, *_SPECS)


def backend_spec(name: str) -> BackendSpec | None:
    """The spec of ``name`` (``auto``: the one it means); None for a name never registered."""
    return _SPECS.get(AUTO_MEANS if name == DEFAULT_BACKEND else name)


def dtype_hint(dtype: str) -> str:
    """Where ``dtype`` runs when only a backend's own dtypes hold it (a GGUF quantisation):
    ``" (q8_0 and q4_1 run on --backend llamacpp)"``; empty for any other dtype."""
    from specbench.models.dtypes import DTYPE_NAMES

    for name, spec in _SPECS.items():
        own = [d for d in spec.dtypes if d not in DTYPE_NAMES]
        if dtype in own:
            return f" ({' and '.join(own)} run on --backend {name})"
    return ""


def load_model_for(backend: str, name: str, dtype: str, device: str, threads: int | None = None) -> Any:
    """The ``models.loading.LoadedModel`` a run on ``backend`` needs: its spec's ``loader`` for a backend with a
    model file of its own (the transformers model beside that file), else the transformers model alone."""
    from specbench.models.loading import load_model

    spec = backend_spec(backend)
    if spec is None or not spec.loader:
        return load_model(name, dtype, device, hint=dtype_hint(dtype))
    module, _, function = spec.loader.partition(":")
    return getattr(importlib.import_module(module), function)(name, dtype, device, threads)


register_backend(BackendSpec("reference", "transformers as loaded", _TORCH))
register_backend(BackendSpec("fast", "preallocated KV cache; oneDNN-packed, fused linears on CPU", _TORCH))
register_backend(LLAMACPP)
register_backend(COMPILED)

__all__ = ["BackendSpec", "TargetCaps", "DEFAULT_BACKEND", "backend_choices", "backend_names", "backend_spec",
           "dtype_hint", "load_model_for", "register_backend"]
