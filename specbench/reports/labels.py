"""One-line labels of a run read from its manifest: hardware, precision switches, model, backend, dtype.

Reports, the leaderboard and ``compare`` name runs with these, so every table says the same thing.
"""
from __future__ import annotations

from typing import Any

from specbench.engine.backends.registry import backend_spec

LEGACY_BACKEND = "reference"  # what runs recorded before backends existed ran: transformers as loaded


def ran_on_cpu(manifest: dict[str, Any]) -> bool:
    """Whether the run's model was on the CPU (older manifests filled ``gpu`` whenever CUDA existed)."""
    device = (manifest.get("hardware") or {}).get("device") or (manifest.get("model") or {}).get("device") or ""
    return str(device).startswith("cpu")


def hardware_label(manifest: dict[str, Any]) -> str:
    """One-line hardware fingerprint: the GPU used (memory, CUDA/driver), else the CPU (cores).

    >>> hardware_label({"hardware": {"cpu": "Xeon", "cores": 8, "gpu": "A100"}, "model": {"device": "cpu"}})
    'Xeon (8 cores)'
    """
    hw = manifest.get("hardware") or {}
    gpu = None if ran_on_cpu(manifest) else hw.get("gpu")
    if gpu:
        mem = f" {hw['gpu_memory_gb']:.0f} GB" if isinstance(hw.get("gpu_memory_gb"), (int, float)) else ""
        extra = ", ".join(f"{k} {hw[k]}" for k in ("cuda", "driver") if hw.get(k))
        return f"{gpu}{mem}" + (f" ({extra})" if extra else "")
    cpu = hw.get("cpu") or "unknown CPU"
    return f"{cpu} ({hw['cores']} cores)" if hw.get("cores") else str(cpu)


def precision_label(manifest: dict[str, Any]) -> str:
    """The numeric switches a run had on (TF32, reduced-precision reductions), or ``-`` when none/unrecorded.

    >>> precision_label({"hardware": {"precision": {"tf32_matmul": False, "fp16_reduced_precision_reduction": True}}})
    'fp16_reduced_precision_reduction'
    """
    flags = (manifest.get("hardware") or {}).get("precision") or {}
    on = [k for k in ("tf32_matmul", "tf32_cudnn", "fp16_reduced_precision_reduction", "bf16_reduced_precision_reduction")
          if flags.get(k)]
    return ", ".join(on) or "-"


def model_label(manifest: dict[str, Any]) -> str:
    model = manifest.get("model") or {}
    return str(model.get("id") or "unknown model")


def backend_label(manifest: dict[str, Any]) -> str:
    """The engine backend a run used, as its spec labels it (``BackendSpec.label``: llama.cpp's names its threads
    and its GGUF's dtype, both of which change its speed); runs recorded before backends existed ran
    transformers as loaded.

    >>> backend_label({"backend": {"name": "llamacpp", "threads": 2, "gguf": {"dtype": "q8_0"}}})
    'llamacpp (2 threads, GGUF q8_0)'
    """
    backend = manifest.get("backend") or {}
    name = str(backend.get("name") or LEGACY_BACKEND)
    spec = backend_spec(name)
    return spec.label(backend) if spec is not None and spec.label is not None else name


def dtype_label(manifest: dict[str, Any]) -> str:
    model = manifest.get("model") or {}
    return str(model.get("dtype") or (manifest.get("config") or {}).get("dtype") or "?")


def checked_precision(manifest: dict[str, Any]) -> str:
    """The numbers the lossless check compared token ids at: the model's dtype, or what the backend's spec says
    (``BackendSpec.precision``: a llama.cpp run's GGUF type, since a quantised target's AR is the reference its
    methods must equal, not fp32's).

    >>> checked_precision({"model": {"dtype": "float32"}}), checked_precision({"model": {"dtype": "torch.bfloat16"}})
    ('fp32', 'bf16')
    >>> checked_precision({"model": {"dtype": "float32"}, "backend": {"name": "llamacpp", "gguf": {"dtype": "q8_0"}}})
    'GGUF q8_0'
    """
    short = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
    backend = manifest.get("backend") or {}
    spec = backend_spec(str(backend.get("name") or LEGACY_BACKEND))
    if spec is not None and spec.precision is not None:
        return spec.precision(backend)
    raw = dtype_label(manifest).removeprefix("torch.")
    return short.get(raw, raw)
