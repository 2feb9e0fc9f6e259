"""How the rest of specbench sees the ``compiled`` backend (``BackendSpec``): light, nothing here imports torch.

>>> COMPILED.label({"name": "compiled", "compiler": "inductor", "mode": "reduce-overhead"})
'compiled (inductor, reduce-overhead)'
"""
from __future__ import annotations

from typing import Any

from specbench.engine.backends.contract import BackendSpec, TargetCaps

NAME = "compiled"


def label(backend: dict[str, Any]) -> str:
    """The compiler and its mode, which change its speed."""
    return f"{NAME} ({backend.get('compiler')}, {backend.get('mode')})"


COMPILED = BackendSpec(
    NAME, "static shapes (row buckets, a fixed-capacity KV cache) compiled by torch.compile; CUDA graphs on CUDA",
    "specbench.engine.backends.compiled.backend:create",
    caps=TargetCaps(batching=False, intermediate_layers=True, prompt_states_cost=False, tree_masks=True,
                    skips_layers=False),
    batch_refusal="its static KV cache holds one sequence (batched buckets are not built yet)", label=label)
