"""Loading the target model: a Hugging Face id or directory, or the embedded SmolLM2 GGUF default."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from specbench.errors import ModelLoadError
from specbench.files.content_hash import LEDGER, Check, ContentMismatch, combined_sha256, stream_sha256, verify_sha256
from specbench.models.device import exact_reductions, select_device, steady_attention_kernels
from specbench.models.dtypes import DTYPES
from specbench.models.embedded import EMBEDDED, EMBEDDED_ID, embedded_model_dir, verify_embedded

__all__ = ["EMBEDDED", "LoadedModel", "ModelLoadError", "load_model", "stop_token_ids"]

HUB_BLOB = "its Hugging Face cache blob name (the hub's sha256 of the file)"


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    model_id: str
    model_hash: str
    device: torch.device
    dtype: str
    tf32: bool
    verification: dict[str, Any] = field(default_factory=dict)  # what the weights were checked against (manifest)
    gguf: Any = None  # a backend's own model file (llama.cpp's GGUF, ``GgufModel``) when it loaded the model


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError("--device cuda requested but CUDA is not available")
    return torch.device(device)


def verify_weights(path: Path) -> dict[str, Any]:
    """Full sha256 of each weight file of a model folder; a file of the Hugging Face cache is checked against
    its blob's name (the hub's sha256 of it), so a damaged download fails here. A local folder carries no
    reference hash: its hashes are recorded, and a resumed run compares them (``run_guards``)."""
    weights: dict[str, str] = {}
    blob_named = []
    t0 = time.perf_counter()
    for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        blob = f.resolve()
        if re.fullmatch(r"[0-9a-f]{64}", blob.name):
            try:
                weights[f.name] = verify_sha256(f, blob.name, HUB_BLOB)
            except ContentMismatch as e:
                raise ModelLoadError(f"damaged download: {e}; delete {blob} and load the model again") from None
            blob_named.append(f.name)
        else:
            start = time.perf_counter()
            weights[f.name] = stream_sha256(f)
            LEDGER.append(Check(str(f), weights[f.name], f.stat().st_size, round(time.perf_counter() - start, 3),
                                "no reference hash (recorded; a resumed run compares it)"))
    against = HUB_BLOB if blob_named and len(blob_named) == len(weights) else (
        "nothing (a local folder carries no reference hash; resuming compares it with the run's manifest)")
    return {"weights_sha256": weights, "against": against, "seconds": round(time.perf_counter() - t0, 3)}


def weights_hash(verification: dict[str, Any]) -> str:
    """The model hash of manifests (16 hex digits): one sha256 over the weight files' names and hashes."""
    return combined_sha256(verification["weights_sha256"])[:16]


def _hub_snapshot(name: str) -> Path:
    """The local snapshot folder from_pretrained just filled for hub id ``name`` (its weights get hashed)."""
    from huggingface_hub import try_to_load_from_cache

    config = try_to_load_from_cache(name, "config.json")
    if not isinstance(config, str):
        raise ModelLoadError(f"model {name!r} loaded but its files are not in the Hugging Face cache; cannot hash its weights")
    return Path(config).parent


def check_hub_model(name: str) -> None:
    """Fail in one line, at once, for a hub id that is neither cached nor reachable.

    transformers retries a failing download for about a minute before it gives up; one metadata
    request tells the two cases apart first: ``check_hub_model("no-such-model")`` offline ->
    ``ModelLoadError("cannot reach the Hugging Face Hub ...")``, online -> ``"unknown model ..."``.
    """
    import os

    from huggingface_hub import HfApi, try_to_load_from_cache
    from huggingface_hub.errors import RepositoryNotFoundError

    if os.environ.get("HF_HUB_OFFLINE") or isinstance(try_to_load_from_cache(name, "config.json"), str):
        return  # offline mode fails fast by itself; a cached model needs no network
    try:
        HfApi().model_info(name, timeout=10)
    except RepositoryNotFoundError:
        raise ModelLoadError(f"unknown model {name!r}: not a local directory and not on the Hugging Face Hub") from None
    except Exception as e:  # connection and timeout errors come from several HTTP libraries
        if isinstance(e, OSError) or any(w in type(e).__name__ for w in ("Connect", "Timeout", "Network")):
            raise ModelLoadError(f"cannot reach the Hugging Face Hub to fetch {name!r} ({type(e).__name__}); "
                                 "pass a local model directory, or --model embedded") from None
        # anything else (gated, rate-limited, ...): from_pretrained reports it


def load_model(name: str = EMBEDDED, dtype: str = "float32", device: str = "auto", hint: str = "") -> LoadedModel:
    """Load a causal LM and its tokenizer for greedy decoding; fp32 runs with TF32 off.

    ``name``: ``embedded``, a Hugging Face id or folder, or a local ``.gguf`` file (transformers dequantises it).
    A backend that runs a model file of its own loads through its spec instead, this model beside it
    (``engine.backends.registry.load_model_for``); ``hint`` ends the error for a dtype only such a backend runs.
    """
    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}{hint}")
    dev = resolve_device(device)
    select_device(dev)
    verification: dict[str, Any] = {}
    gguf_file = None
    if name == EMBEDDED:
        path, model_id = embedded_model_dir(), EMBEDDED_ID
        verification = verify_embedded(path)  # before loading: damaged weights must not run
    elif name.endswith(".gguf"):
        file = Path(name).expanduser()
        if not file.is_file():
            raise ModelLoadError(f"GGUF file not found: {name}")
        path, model_id, gguf_file = file.parent, name, file.name
        start = time.perf_counter()
        verification = {"weights_sha256": {file.name: stream_sha256(file)}, "against": "nothing (a local file carries "
                        "no reference hash; resuming compares it with the run's manifest)",
                        "seconds": round(time.perf_counter() - start, 3)}
    else:
        path, model_id = Path(name), name
        looks_local = name.startswith((".", "/", "~")) or path.exists()
        if looks_local and not (path / "config.json").is_file():
            raise ModelLoadError(f"model directory not found or has no config.json: {name}")
        if not looks_local:
            check_hub_model(name)
    tf32 = set_precision(dtype)
    try:
        tokenizer, model = _from_pretrained(path, dtype, gguf_file)
    except Exception as e:  # truncated or corrupt weights raise many types (safetensors, torch, json)
        first = (str(e).splitlines() or [type(e).__name__])[0]
        fix = f"delete {path} to convert it again" if name == EMBEDDED else "re-download it or check the folder"
        raise ModelLoadError(f"cannot load model {name!r} ({type(e).__name__}: {first}); {fix}") from None
    model.to(dev).eval()
    if not verification:
        verification = verify_weights(path if path.is_dir() else _hub_snapshot(name))
    return LoadedModel(model, tokenizer, model_id, weights_hash(verification), dev, dtype, tf32, verification)


def set_precision(dtype: str) -> bool:
    """The precision flags a run sets (fp32: TF32 off; exact reductions, steady attention kernels); returns
    whether TF32 is on. Half-precision GEMMs accumulate in fp32 either way."""
    tf32 = False
    if dtype == "float32":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    else:
        tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
    exact_reductions()  # (flags recorded in the manifest)
    steady_attention_kernels()
    return tf32


def _from_pretrained(path: Path, dtype: str, gguf_file: str | None) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    extra = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(str(path), **extra)
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=DTYPES[dtype], attn_implementation="sdpa", **extra)
    return tokenizer, model


def vocab_size(model: Any) -> int | None:
    """Width of the model's logits: every token id it can emit is below it (recorded in manifests)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    if weight is not None and weight.dim() == 2:
        return int(weight.shape[0])
    size = getattr(getattr(model, "config", None), "vocab_size", None)
    return int(size) if isinstance(size, int) else None


def stop_token_ids(tokenizer: Any, model: Any) -> set[int]:
    """EOS ids from the tokenizer and generation config (the chat template's end-of-turn included)."""
    ids: set[int] = set()
    for src in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(src, int):
            ids.add(src)
        elif src:
            ids.update(int(i) for i in src)
    for tok in ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>"):
        tid = tokenizer.convert_tokens_to_ids(tok) if tok in tokenizer.get_vocab() else None
        if isinstance(tid, int):
            ids.add(tid)
    return ids
