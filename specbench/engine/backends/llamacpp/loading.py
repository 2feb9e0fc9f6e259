"""Loading the model for the llama.cpp backend (its spec's ``loader``): the transformers copy in float32 (drafters
read its weights, the tokenizer is its own) and the GGUF llama.cpp runs in ``dtype`` (``gguf_files.py``); the model
hash is then that file's.
"""
from __future__ import annotations

import dataclasses

from specbench.engine.backends.llamacpp.gguf_files import LLAMACPP_DTYPES, gguf_model
from specbench.engine.backends.llamacpp.library import llama
from specbench.errors import ModelLoadError
from specbench.models.embedded import EMBEDDED
from specbench.models.loading import LoadedModel, load_model, resolve_device


def load(name: str, dtype: str, device: str, threads: int | None) -> LoadedModel:
    """``load_model`` for the llama.cpp backend: the transformers copy in float32 and the GGUF llama.cpp runs."""
    llama()  # without the extra: its one-line error now, before any file is written
    if dtype not in LLAMACPP_DTYPES:
        raise ModelLoadError(f"--backend llamacpp runs dtype {', '.join(LLAMACPP_DTYPES)}, got {dtype!r}")
    if resolve_device(device).type != "cpu":
        raise ModelLoadError(f"--backend llamacpp runs on the CPU (this build of llama.cpp), not --device {device}")
    if name != EMBEDDED and not name.endswith(".gguf"):
        raise ModelLoadError(f"--backend llamacpp runs a GGUF file: --model embedded or a path ending in .gguf, got {name!r}")
    lm = load_model(name, "float32", "cpu")
    gguf = gguf_model(name, dtype, threads or 2)
    verification = {**lm.verification, "gguf": gguf.verification, "gguf_file": str(gguf.path)}
    return dataclasses.replace(lm, model_hash=gguf.sha256[:16], dtype=dtype, verification=verification, gguf=gguf)
