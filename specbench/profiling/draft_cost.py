"""Drafters that run a model of their own, as a device profile knows them: declared by their method, timed here.

A method whose drafter runs a model (SpS's and PARD's draft LMs, EAGLE's and EAGLE-3's layers, Medusa's and
Hydra's heads, ReDrafter's RNN head) declares it through ``specbench.api.register_draft_cost``:

- ``shape(config)``: what fixes its drafting cost besides the target's shape, from the method's config as the run's
  manifest records it (``method_configs``): the draft model and the draft's width options, not its trained
  values. It names the drafter in a profile (``drafter_key``), so a run's drafter is matched to the entry measured
  for the same shape.
- ``probe(config, env)``: the drafter built with random weights of that shape on the profiled target
  (``env``: a ``MethodEnv``), so the GPU check profiles drafters with no checkpoint and no network; without one,
  the method's own factory is built with ``random_options`` over the config (``checkpoint=random``).
- ``kind``: ``model`` (its own model, timed here), or ``target`` (the target with layers skipped, SWIFT: its
  seconds follow the target's T(1), nothing to time).

``run/drafter_probe.py``'s ``measure_drafter`` (the run layer builds drafters) times the drafter's ``propose`` (what a run records as the step's ``draft_times_s``) on a
synthetic generation after ``CONTEXT`` random tokens, at each draft depth of ``DEPTHS`` (the ``max_depth`` hint,
as a fixed budget or the tokens left cut it), nothing accepted between steps (each step feeds the drafter one new
token and row), and keeps the draft's width there: ``{"1": {"size": 1, "s": 0.0021}, "2": ...}``. Methods never
reach this module but through the api; it never imports them (their registrations are found by the plugin
discovery, as methods are).

Every other drafter is model-free: its seconds are priced by the host factor (``host_factor.py``).

>>> drafter_key("eagle", {"top_k": 6, "total_tokens": 16})
'eagle:edb4f2c6bf'
>>> step_seconds({"1": {"size": 1, "s": 0.002}, "4": {"size": 4, "s": 0.005}}, 2)
0.003
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from specbench.plugins.registry import Registry

MODEL, TARGET = "model", "target"
DEPTHS = (1, 2, 3, 4, 6, 8, 12, 16)
CONTEXT = 256  # tokens of the synthetic prompt before the timed steps
REPEATS, WARMUP = 7, 2


@dataclass(frozen=True)
class DraftCostSpec:
    """A method's declaration of its drafter's own model (see the module docstring)."""

    method: str
    shape: Callable[[dict[str, Any]], dict[str, Any]]
    probe: Callable[[dict[str, Any], Any], Any] | None = None
    random_options: dict[str, Any] = field(default_factory=dict)
    kind: str = MODEL


DRAFT_COSTS: Registry[DraftCostSpec] = Registry("drafter cost declaration")


def register_draft_cost(method: str, shape: Callable[[dict[str, Any]], dict[str, Any]],
                        probe: Callable[[dict[str, Any], Any], Any] | None = None,
                        random_options: dict[str, Any] | None = None, kind: str = MODEL) -> DraftCostSpec:
    """Declare that ``method``'s drafter runs a model of its own (``kind=model``) or the target (``kind=target``)."""
    if kind not in (MODEL, TARGET):
        raise ValueError(f"draft cost kind must be {MODEL!r} or {TARGET!r}, got {kind!r}")
    spec = DraftCostSpec(method, shape, probe, dict(random_options or {}), kind)
    DRAFT_COSTS.add(method, spec)
    return spec


def drafter_key(method: str, shape: dict[str, Any]) -> str:
    """``method:<10 hex digits of its shape>``: the name of a drafter's entry in a device profile."""
    blob = json.dumps(shape, sort_keys=True, default=str)
    return f"{method}:{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


@dataclass(frozen=True)
class DrafterIdentity:
    """A run's drafter that runs a model: its method, shape, profile key and kind."""

    method: str
    shape: dict[str, Any]
    key: str
    kind: str


def drafter_identity(label: str, config: dict[str, Any]) -> DrafterIdentity | None:
    """The identity of the drafter a method label ran with ``config`` (its manifest entry), None when model-free."""
    from specbench.config.method_labels import split_label

    method = split_label(label)[0]
    if method not in DRAFT_COSTS:
        return None
    spec = DRAFT_COSTS.get(method)
    shape = spec.shape({k: v for k, v in config.items() if k != "budget"})
    return DrafterIdentity(method, shape, drafter_key(method, shape), spec.kind)


def step_seconds(steps: dict[str, dict[str, float]], depth: float) -> float:
    """A drafter's step seconds at ``depth`` from its profile entry's ``steps``: linear between measured depths,
    the nearest end's value outside them (a draft deeper than any measured costs what the deepest did)."""
    pairs = sorted((int(d), float(v["s"])) for d, v in steps.items())
    return float(np.interp(depth, [p[0] for p in pairs], [p[1] for p in pairs]))
