"""Measure a device profile (``device_profile.py``) for each backend ``specbench profile`` times.

Per backend: the target's T(n) after each context of ``contexts`` (``measure.measure_forward_curve``) and its
prefill P(L) (``prefill.py``). Once for all backends (they run in the same torch process, on the same host):
each drafter that runs a model of its own (``drafter_probe.measure_drafter``, random weights of the run's shape)
and the host's model-free drafting figure (``host_factor.py``). A drafter that cannot be built here is left out
with a one-line warning; ``specbench project`` then names it and this command to measure it.

>>> DeviceRequest(contexts=(128, 512), sizes=(1, 2), repeats=3).drafters
()
"""
from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

from specbench.profiling.device_profile import ProfileParts, make_device_profile
from specbench.profiling.profile_spread import relative_spread, spreads_of

ALL = "all"


@dataclass(frozen=True)
class DeviceRequest:
    """What to measure: T(n) sizes at each context, repeats, the prefill's longest prompt, drafters and their
    options (``--method-opt``: the run's drafter settings, so its shape matches the run's)."""

    contexts: tuple[int, ...]
    sizes: tuple[int, ...]
    repeats: int
    prefill_longest: int = 1024
    drafters: tuple[str, ...] = ()
    method_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    depths: tuple[int, ...] | None = None  # draft depths timed (None: ``draft_cost.DEPTHS``)


def drafter_names(text: str) -> tuple[str, ...]:
    """``--drafters``: ``all`` (every method declaring a model of its own), ``none``, or a comma list."""
    from specbench.profiling.draft_cost import DRAFT_COSTS

    if text == "none":
        return ()
    if text == ALL:
        return tuple(DRAFT_COSTS.names())
    names = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    for n in names:
        DRAFT_COSTS.get(n.partition("@")[0])  # (an unknown name: one line naming the known ones)
    return names


def measure_drafters(lm: Any, req: DeviceRequest, cache_dir: Any) -> dict[str, dict[str, Any]]:
    """``{drafter key: entry}`` for each requested drafter (random weights on ``lm``'s target)."""
    from specbench.config.method_labels import label_options
    from specbench.profiling.draft_cost import DEPTHS, drafter_key
    from specbench.run.drafter_probe import measure_drafter
    from specbench.run.method_env import MethodEnv

    env = MethodEnv(lm.model, lm.tokenizer, lm.model_id, lm.device, None, cache_dir)
    out: dict[str, dict[str, Any]] = {}
    for label in req.drafters:
        try:
            entry = measure_drafter(label, label_options(label, req.method_options), env, req.depths or DEPTHS,
                                    repeats=req.repeats)
        except Exception as e:  # (one drafter that cannot be built here must not cost the whole profile)
            print(f"warning: drafter {label} not profiled ({type(e).__name__}: {str(e).splitlines()[0][:200]})",
                  file=sys.stderr)
            continue
        out[drafter_key(entry["method"], entry["shape"])] = entry
    return out


def medians(times: dict[int, list[float]]) -> dict[int, float]:
    """The median of each figure's repeats."""
    return {k: statistics.median(ts) for k, ts in times.items()}


def spread_record(target: dict[int, dict[int, list[float]]], prefill: dict[int, list[float]],
                  host: list[float]) -> dict[str, Any]:
    """A device profile's ``spread`` (``profile_spread``) of its repeats: target by context, prefill, host.

    >>> spread_record({128: {1: [1.0, 1.0, 1.2, 1.1, 1.0]}}, {16: [2.0, 2.0]}, [1.0, 2.0, 3.0])
    {'target': {'128': {'1': 0.1}}, 'prefill': {}, 'host': 0.5}
    """
    host_spread = relative_spread(host)
    return {"target": {str(c): spreads_of(ts) for c, ts in sorted(target.items())}, "prefill": spreads_of(prefill),
            **({"host": host_spread} if host_spread is not None else {})}


def measure_device_profiles(lm: Any, backends: dict[str, Any], req: DeviceRequest, cache_dir: Any,
                            threads: int | None = None) -> dict[str, dict[str, Any]]:
    """``{backend key: device profile}`` for each resolved backend of ``backends`` (name -> backend)."""
    import torch

    from specbench.models.context import config_context
    from specbench.profiling.fingerprint import hardware_fingerprint
    from specbench.profiling.host_factor import host_rounds
    from specbench.profiling.measure import measure_forward_times
    from specbench.profiling.model_shape import shape_of_config
    from specbench.profiling.prefill import measure_prefill_times, prefill_lengths

    limit = config_context(getattr(lm.model, "config", None))
    drafters = measure_drafters(lm, req, cache_dir)
    host = host_rounds()
    model = {"id": lm.model_id, "hash": lm.model_hash, "shape": shape_of_config(lm.model.config, lm.tokenizer)}
    out = {}
    for name, backend in backends.items():
        key = getattr(backend, "key", name)
        times = {c: measure_forward_times(lm.model, c, req.sizes, req.repeats, backend=backend) for c in req.contexts}
        prefill = measure_prefill_times(lm.model, prefill_lengths(limit, req.prefill_longest), backend)
        described = backend.describe(lm.model) if hasattr(backend, "describe") else {}
        parts = ProfileParts(
            machine=hardware_fingerprint(lm.device),
            backend={"name": name, "key": key, "threads": described.get("threads") or threads or torch.get_num_threads()},
            dtype=lm.dtype, model=model, latency_by_context_s={c: medians(ts) for c, ts in times.items()},
            prefill_s=medians(prefill), drafters=drafters, host_s=statistics.median(host),
            drafter_threads=torch.get_num_threads(), spread=spread_record(times, prefill, host))
        out[key] = make_device_profile(parts)
    return out
