"""The ``llamacpp`` engine backend: the target's forward on llama.cpp (a GGUF file), the loop unchanged.

Same contract as the torch backends (``contract.Backend``: ``prepare``, ``new_cache``, ``describe``, ``target``;
its spec's caps declare no batching, so it is no ``BatchingBackend``, nor skipped layers). The transformers model
stays loaded beside it (drafters read its embeddings and head, the tokenizer is its tokenizer); llama.cpp
runs ``gguf`` on ``threads`` threads. F32 and F16/BF16 files run in full precision (F32 KV cache, no flash
attention: within 1e-5 of the fp32 transformers forward); quantised ones with llama.cpp's defaults (F16 KV cache,
flash attention when it chooses), as a llama.cpp user runs them.

Example: ``LlamaCppBackend(gguf_model("embedded", "float32"), threads=2)`` -> ``Engine(model, stops, backend)``
decodes the embedded model on llama.cpp; ``describe()`` -> ``{"name": "llamacpp", "threads": 2, "kv_cache":
"llama.cpp unified, f32", "gguf": {...}, "library": {...}}``.
"""
from __future__ import annotations

import os
from typing import Any

from specbench.engine.backends.llamacpp.context import LlamaContext
from specbench.engine.backends.llamacpp.spec import LLAMACPP, NAME
from specbench.engine.backends.llamacpp.target import LlamaCache, LlamaTarget
from specbench.engine.backends.llamacpp.gguf_files import QUANTISED, GgufModel
from specbench.engine.backends.llamacpp.library import library_info



def default_threads() -> int:
    """The CPU cores this process may run on (2 on the project's CI machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1


class LlamaCppBackend:
    """llama.cpp running ``gguf``; the context is created on first use and shared by the engine's generations."""

    name = NAME
    packed = False
    caps = LLAMACPP.caps  # one sequence at a time (no ``new_batch_cache``)

    def __init__(self, gguf: GgufModel, threads: int | None = None) -> None:
        self.gguf = gguf
        self.threads = threads or default_threads()
        self.full_precision = gguf.dtype not in QUANTISED
        self._ctx: LlamaContext | None = None

    @property
    def key(self) -> str:
        """What distinguishes its cost profile from another's on the same model file (``cost_profile.py``)."""
        return f"{NAME}-{self.threads}t"

    @property
    def context(self) -> LlamaContext:
        if self._ctx is None:
            self._ctx = LlamaContext(self.gguf.path, self.threads, self.full_precision)
        return self._ctx

    def prepare(self, model: Any) -> None:
        """Load the GGUF into llama.cpp (once); the transformers model is left as it is."""
        self.context  # noqa: B018 (the property loads it)

    def new_cache(self, model: Any, capacity: int) -> LlamaCache:
        return LlamaCache(self.context, capacity)

    def target(self, model: Any) -> LlamaTarget:
        return LlamaTarget(self.context, model)

    def describe(self, model: Any = None) -> dict[str, Any]:
        """What the manifest and reports record: the file, how it was made, threads, KV cache, the build."""
        kv = "f32, flash attention off" if self.full_precision else "llama.cpp default (f16, flash attention auto)"
        return {
            "name": NAME,
            "threads": self.threads,
            "kv_cache": f"llama.cpp unified, {kv}",
            "gguf": {"file": self.gguf.path.name, "dtype": self.gguf.dtype, "sha256": self.gguf.sha256,
                     "made": self.gguf.made},
            "library": library_info(),
        }


def create(name: str, device: Any, dtype: Any, gguf: GgufModel | None, threads: int | None) -> LlamaCppBackend:
    """The backend the registry builds (``spec.LLAMACPP``): llama.cpp running ``gguf`` on the CPU."""
    if gguf is None:
        raise ValueError("the llamacpp backend runs a GGUF file: load the model with backend='llamacpp'")
    if device.type != "cpu":
        raise ValueError(f"the llamacpp backend runs on the CPU (this build of llama.cpp), not {device}")
    return LlamaCppBackend(gguf, threads)
