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

``measure_drafter`` times the drafter's ``propose`` (what a run records as the step's ``draft_times_s``) on a
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

import dataclasses
import hashlib
import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

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


def measure_drafter(label: str, options: dict[str, Any], env: Any, depths: tuple[int, ...] = DEPTHS,
                    repeats: int = REPEATS, context: int = CONTEXT, seed: int = 0) -> dict[str, Any]:
    """A profile entry for ``label``'s drafter built from ``options`` on ``env``'s target with random weights:
    its identity and, per depth, the median seconds of ``propose`` and the draft's width."""
    from specbench.config.method_labels import split_label
    from specbench.run.methods_factory import build_drafter, method_config

    method = split_label(label)[0]
    spec = DRAFT_COSTS.get(method)
    config = dataclasses.asdict(method_config(label, options))
    shape = spec.shape(config)
    entry: dict[str, Any] = {"method": method, "shape": shape, "kind": spec.kind, "context": context}
    if spec.kind == TARGET:
        return entry
    if spec.probe is not None:
        drafter = spec.probe(config, env)
    else:
        drafter = build_drafter(method, {**config, **spec.random_options}, env)[0]
    entry["steps"] = time_steps(drafter, env.model, depths, repeats, context, seed)
    return entry


def time_steps(drafter: Any, model: Any, depths: tuple[int, ...], repeats: int, context: int,
               seed: int = 0) -> dict[str, dict[str, float]]:
    """``{depth: {"size", "s"}}``: median ``propose`` seconds and draft width of ``drafter`` at each depth, on a
    synthetic generation whose hidden states are random rows of the target's width."""
    from specbench.engine.drafter import DraftContext, StepResult

    gen = torch.Generator().manual_seed(seed)
    cfg = model.config
    vocab, hidden = int(cfg.vocab_size), int(cfg.hidden_size)
    param = next(model.parameters())
    layers = tuple(getattr(drafter, "feature_layers", ()) or ())

    def rows(k: int) -> tuple[torch.Tensor, torch.Tensor | None]:  # [k, h] and [k, len(layers), h]
        h = torch.randn(k, hidden, generator=gen).to(param.device, param.dtype)
        states = torch.randn(k, len(layers), hidden, generator=gen).to(param.device, param.dtype) if layers else None
        return h, states

    tokens = torch.randint(0, vocab, (context + 1,), generator=gen).tolist()
    drafter.begin(tokens[:-1])
    fresh, fresh_layers = rows(context)
    out: dict[str, dict[str, float]] = {}
    with torch.inference_mode():
        for depth in depths:
            times, sizes = [], []
            for i in range(WARMUP + repeats):
                ctx = DraftContext(list(tokens), context, fresh[-1], model, depth, fresh, layer_states=fresh_layers)
                t = time.perf_counter()
                proposal = drafter.propose(ctx)
                elapsed = time.perf_counter() - t
                tree = getattr(proposal, "tree", proposal)
                bonus = int(torch.randint(0, vocab, (1,), generator=gen))
                drafter.observe(StepResult(tree if tree is not None and len(tree) else None, [], bonus, root=tokens[-1]))
                tokens.append(bonus)
                fresh, fresh_layers = rows(1)
                if i >= WARMUP:
                    times.append(elapsed)
                    sizes.append(len(tree) if tree is not None else 0)
            out[str(depth)] = {"size": float(statistics.median(sizes)), "s": statistics.median(times)}
    return out
