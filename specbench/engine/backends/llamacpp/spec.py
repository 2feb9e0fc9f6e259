"""How the rest of specbench sees the ``llamacpp`` backend (``BackendSpec``): what its target can do, the dtypes
it runs, why it does not batch, and how reports name its runs. Light on purpose: nothing here loads llama.cpp,
so ``--help`` and reports work without the extra.

>>> LLAMACPP.label({"name": "llamacpp", "threads": 2, "gguf": {"dtype": "q8_0"}})
'llamacpp (2 threads, GGUF q8_0)'
>>> LLAMACPP.precision({"name": "llamacpp", "gguf": {"dtype": "float32"}})
'GGUF fp32'
"""
from __future__ import annotations

from typing import Any

from specbench.engine.backends.contract import BackendSpec, TargetCaps
from specbench.engine.backends.llamacpp.gguf_files import LLAMACPP_DTYPES

NAME = "llamacpp"
_SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def label(backend: dict[str, Any]) -> str:
    """Its threads and its GGUF's dtype, both of which change its speed."""
    threads = backend.get("threads")
    return f"{NAME} ({threads} thread{'' if threads == 1 else 's'}, GGUF {(backend.get('gguf') or {}).get('dtype')})"


def precision(backend: dict[str, Any]) -> str:
    """The GGUF's type: a quantised target's AR is the reference its methods must equal, not fp32's."""
    gguf = str((backend.get("gguf") or {}).get("dtype"))
    return f"GGUF {_SHORT.get(gguf, gguf)}"


LLAMACPP = BackendSpec(
    NAME, "llama.cpp on a GGUF file: --model embedded or PATH.gguf; the extra specbench[llamacpp]",
    "specbench.engine.backends.llamacpp.backend:create",
    caps=TargetCaps(batching=False, intermediate_layers=False, prompt_states_cost=True, skips_layers=False),
    dtypes=LLAMACPP_DTYPES, batch_refusal="the batched loop keeps its own padded KV cache", torch_forward=False,
    label=label, precision=precision, loader="specbench.engine.backends.llamacpp.loading:load")
