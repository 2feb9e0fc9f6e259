"""Step prices for a projection: what one decode step of a recorded generation costs on a profiled machine.

A run's records say, per step, how many rows the target verified (``1 + draft_sizes + aux_sizes``), at which
context, how deep the draft was and how long drafting took here. On the other machine (a device profile,
``profiling/device_profile.py``):

- the target's forward costs ``T_onto(rows, context)`` (the profile's curves by context);
- the prefill costs ``P_onto(prompt tokens)``, the same for AR and every method;
- drafting costs, by the drafter's kind (``Drafting``):
  ``model`` (its own model: SpS, EAGLE, Medusa, ...): the profile's measured seconds at the step's draft depth
  (``projection.priced_depths``: a chain's drafted depth, a tree's depth asked of the drafter);
  ``host`` (model-free: PLD, REST, suffix, lookahead): the recorded seconds x ``host_onto / host_here``, the
  ratio of the two hosts' figures on the fixed drafting benchmark (``profiling/host_factor.py``);
  ``target`` (the target with layers skipped, SWIFT): the recorded seconds x ``T_onto(1) / T_here(1)``;
  ``none``: AR, nothing.

>>> costs = machine_costs({"target": {"latency_by_context_s": {"128": {"1": 0.01, "5": 0.02}},
...                                   "prefill_s": {"16": 0.02, "64": 0.08}}, "drafters": {}, "host_s": 0.002})
>>> round(costs.target(3, 128), 4), round(costs.prefill(40), 3)
(0.015, 0.05)
>>> host = Drafting(HOST, host_ratio=0.5)
>>> [round(float(x), 4) for x in drafting_seconds(host, [0.002, 0.004], [2, 3], [2, 3])]
[0.001, 0.002]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from specbench.profiling.cost_profile import cost_function
from specbench.profiling.draft_cost import step_seconds
from specbench.profiling.prefill import prefill_cost

Cost = Callable[..., Any]  # (n, context=None) -> seconds; numpy arrays broadcast
MODEL, HOST, TARGET, NONE = "model", "host", "target", "none"


@dataclass(frozen=True)
class MachineCosts:
    """A device profile read as prices: the target's T(n, context), the prefill P(L), drafters, the host."""

    target: Cost
    prefill: Callable[[float], float]
    drafters: dict[str, dict[str, Any]]
    host_s: float


def machine_costs(profile: dict[str, Any]) -> MachineCosts:
    """The prices of a (checked) device profile."""
    by = profile["target"]["latency_by_context_s"]
    first = by[min(by, key=int)]
    return MachineCosts(cost_function({"latency_s": first, "latency_by_context_s": by}),
                        prefill_cost(profile["target"]["prefill_s"]), dict(profile.get("drafters") or {}),
                        float(profile["host_s"]))


@dataclass(frozen=True)
class Drafting:
    """How one method's drafting seconds are priced on the other machine (see the module docstring)."""

    kind: str
    steps: dict[str, dict[str, float]] | None = None  # ``model``: the profile's entry's seconds by depth
    host_ratio: float = 1.0  # ``host``: host_onto / host_here
    target_ratio: Callable[[np.ndarray], np.ndarray] | None = None  # ``target``: T_onto(1, c) / T_here(1, c)
    # what the engine asked of a drafter each step (``engine/step.py``): min(tokens left - 1, a fixed budget K);
    # None (runs without max_new_tokens, and budget=auto, whose hint is not recorded): the drafted depth
    max_new_tokens: int | None = None
    depth_limit: int | None = None  # a fixed budget K (None: none)


def drafting_seconds(d: Drafting, recorded_s: Sequence[float], depths: Sequence[int],
                     context: Sequence[float]) -> np.ndarray:
    """Per decode step, the drafting seconds on the other machine; a step that did not call the drafter (its
    recorded seconds 0: a skipped step) costs nothing there either."""
    rec = np.asarray(recorded_s, dtype=float)
    if d.kind == NONE:
        return np.zeros_like(rec)
    if d.kind == HOST:
        return rec * d.host_ratio
    if d.kind == TARGET:
        assert d.target_ratio is not None
        return rec * d.target_ratio(np.asarray(context, dtype=float))
    assert d.steps is not None
    priced = np.array([step_seconds(d.steps, max(int(k), 1)) for k in depths], dtype=float)
    return np.where(rec > 0, priced, 0.0)
