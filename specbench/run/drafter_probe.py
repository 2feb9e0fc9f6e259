"""A drafter's step cost measured for a device profile: the drafter built as a run builds it (random weights of
its shape, ``profiling/draft_cost.py`` declarations) and its ``propose`` timed at each draft depth.

The drafter sees a synthetic generation: ``CONTEXT`` random tokens, then one random token and hidden-state row per
step (nothing accepted between steps), so the seconds are its own work at that depth and width, not the target's.
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any

import torch

from specbench.profiling.draft_cost import CONTEXT, DEPTHS, DRAFT_COSTS, REPEATS, TARGET, WARMUP
from specbench.profiling.profile_spread import SPREAD, relative_spread


def measure_drafter(label: str, options: dict[str, Any], env: Any, depths: tuple[int, ...] = DEPTHS, *,
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
    """``{depth: {"size", "s", "spread"}}``: median ``propose`` seconds, draft width and the seconds' relative spread
    (``profile_spread``) of ``drafter`` at each depth, on a
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
                ctx = DraftContext(list(tokens), context, fresh[-1], depth, fresh, layer_states=fresh_layers)
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
            out[str(depth)] = {"size": float(statistics.median(sizes)), "s": statistics.median(times),
                               **({SPREAD: spread} if (spread := relative_spread(times)) is not None else {})}
    return out
