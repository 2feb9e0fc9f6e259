"""The steps every trainer of a drafter shares: autograd on inside inference-mode code, and one optimiser step.

>>> import torch
>>> w = torch.nn.Parameter(torch.ones(2)); opt = torch.optim.SGD([w], lr=0.5)
>>> class Bar:
...     def update(self, n): pass
...     def set_postfix(self, **kw): pass
>>> trainable(optimizer_step)(opt, (w * w).sum(), Bar(), clip=0.5, clip_by="value"); w.tolist()
[0.75, 0.75]
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import torch


def trainable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a trainer with autograd on, even when called from an inference-mode region (a method factory
    training its default head on first use)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with torch.inference_mode(False), torch.enable_grad():
            return fn(*args, **kwargs)

    return run


def optimizer_step(opt: torch.optim.Optimizer, loss: torch.Tensor, bar: Any, clip: float | None = None,
                   clip_by: str = "norm") -> None:
    """One training step shared by the trainers: backward, optional gradient clip, step, progress bar.

    ``clip_by``: "norm" scales the whole gradient to norm <= ``clip`` (``clip_grad_norm_``); "value" clamps
    each component to ``[-clip, clip]`` (``clip_grad_value_``, what EAGLE's reference trainer does).
    """
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if clip is not None:
        params = [p for g in opt.param_groups for p in g["params"]]
        if clip_by == "value":
            torch.nn.utils.clip_grad_value_(params, clip)
        else:
            torch.nn.utils.clip_grad_norm_(params, clip)
    opt.step()
    bar.update(1)
    bar.set_postfix(loss=f"{loss.item():.3f}")
