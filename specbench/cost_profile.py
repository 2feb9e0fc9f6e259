"""This machine's cost profile T(n), measured once per model x dtype x backend x device and cached.

``budget=auto`` (``specbench/engine/budget.py``) needs T(n), the seconds of one target forward of
``n`` new tokens, to weigh a bigger draft against its verification cost. It is measured with the
engine's own forward (``profile.measure_forward_curve``) after ``CONTEXT_LEN`` cached tokens and stored
as a ``specbench profile`` file under ``$SPECBENCH_CACHE/profiles/<key>.json``; the key hashes the
model's weights hash, dtype, backend, device and the hardware fingerprint (CPU model, cores and
threads, GPU, torch version), so another machine, backend or precision is measured anew. Delete the file to re-measure
(for instance after it was taken on a busy machine); each run copies the profile it used into its
folder (``profile.json``), so reports predict from the same numbers.

Example: ``profile_key({"hash": "ab12", "dtype": "float32"}, "fast", {"cpu": "EPYC", "device": "cpu"})``
is a 12-hex-digit key, the same on every call with the same inputs.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

from specbench.profile import latency, load_profile, make_profile, measure_forward_curve, save_profile

CONTEXT_LEN = 512  # cached tokens before the timed forward: about a benchmark prompt plus its answer
SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
REPEATS = 9


def profile_key(model: dict[str, Any], backend: str, hardware: dict[str, Any]) -> str:
    """12 hex digits identifying (model weights, dtype, backend, hardware)."""
    blob = json.dumps({"model": model.get("hash"), "dtype": model.get("dtype"), "backend": backend,
                       "hardware": hardware}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def cached_cost_profile(lm: Any, backend: str, cache_root: Path, quiet: bool = False) -> tuple[dict[str, Any], Path]:
    """(profile, its file) for the loaded model ``lm`` on ``backend``: read from the cache, else measured now."""
    from specbench.profile import hardware_fingerprint

    hardware = hardware_fingerprint(lm.device)
    hardware.pop("timestamp", None)
    model = {"name": lm.model_id, "id": lm.model_id, "hash": lm.model_hash, "dtype": lm.dtype}
    path = cache_root / "profiles" / f"{profile_key(model, backend, _stable(hardware))}.json"
    if path.is_file():
        return load_profile(path), path
    if not quiet:
        print(f"[specbench] measuring this machine's cost profile T(n) for budget=auto (once; cached in {path})",
              file=sys.stderr)
    curve = measure_forward_curve(lm.model, CONTEXT_LEN, SIZES, REPEATS, backend=backend)
    prof = make_profile(curve, model, CONTEXT_LEN, hardware, {backend: curve})
    path.parent.mkdir(parents=True, exist_ok=True)
    save_profile(prof, path)
    return prof, path


def _stable(hardware: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint fields that identify a machine (not ones that vary between runs on it)."""
    keep = ("cpu", "cores", "torch_threads", "device", "gpu", "gpu_memory_gb", "cuda", "torch")
    return {k: hardware[k] for k in keep if k in hardware}


def cost_function(profile: dict[str, Any]) -> Callable[[int], float]:
    """T(n) of ``profile`` as a function of the number of new tokens."""
    return lambda n: latency(profile, n)
