"""One draft head per (target model, checkpoint), shared by every task's drafter.

A run builds a drafter per (method, task); loading a head for each would hold up to one copy per task
(~1.2 GB each for a 7B target in fp16). Heads are stateless at inference (the beam search keeps its
state in the drafter), so every task can read the same one. The cache is keyed weakly on the model:
when the target is freed, its heads go with it.

>>> import torch
>>> model, calls = torch.nn.Linear(2, 2), []
>>> load = lambda: calls.append(1) or object()
>>> shared_head(model, ("ckpt", "abc"), load) is shared_head(model, ("ckpt", "abc"), load), len(calls)
(True, 1)
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Hashable

import torch

_HEADS: "weakref.WeakKeyDictionary[torch.nn.Module, dict[Hashable, Any]]" = weakref.WeakKeyDictionary()


def shared_head(model: torch.nn.Module, key: Hashable, load: Callable[[], Any]) -> Any:
    """The head cached for ``model`` under ``key`` (a checkpoint path and its content hash), loading it once."""
    per_model = _HEADS.setdefault(model, {})
    if key not in per_model:
        per_model[key] = load()
    return per_model[key]
