"""A forward of the target with some decoder sub-layers skipped: the draft model of self-speculative methods (SWIFT).

A skipped sub-layer (a layer's attention, or its MLP) adds nothing to the residual stream: the layer's input passes
through unchanged, as if that sub-layer's output projection were zero. A skipped attention also writes no keys or
values, so its layer's cache falls behind the kept layers' (``self_draft.py`` keeps that consistent).

Sub-layers are found by the names transformers gives them, per decoder layer: ``self_attn`` (Llama, Qwen2),
``attn`` (GPT-2) or ``attention`` (GPT-NeoX), and ``mlp`` (all four). While ``skipping`` is active their ``forward``
is swapped for one returning zeros, so every family's own residual code runs unchanged (GPT-NeoX's parallel
residual included); the swap is undone on exit, even after an error.

Example: on a 4-layer model ``SkipSet(attention=(1,), mlp=(1, 2))`` runs layer 0 and layer 3 whole, layer 1 as
the identity (both sub-layers skipped) and layer 2 as its attention alone; the logits equal those of a copy whose
layer-1 attention and layer-1/2 MLP output projections are zero (``tests/test_swift.py`` checks exactly that).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

import torch
from torch import nn

ATTENTION_NAMES = ("self_attn", "attn", "attention")  # Llama/Qwen2/Mistral, GPT-2, GPT-NeoX
MLP_NAMES = ("mlp",)


@dataclass(frozen=True)
class SkipSet:
    """Which decoder layers' attention and MLP sub-layers a draft forward skips (0-based layer indices).

    >>> SkipSet((3, 1), (2,)).count, SkipSet((3, 1), (2,)).attention
    (3, (1, 3))
    """

    attention: tuple[int, ...] = ()
    mlp: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "attention", tuple(sorted({int(i) for i in self.attention})))
        object.__setattr__(self, "mlp", tuple(sorted({int(i) for i in self.mlp})))

    @property
    def count(self) -> int:
        """How many sub-layers are skipped."""
        return len(self.attention) + len(self.mlp)


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder layers of a transformers causal LM's base model (``layers`` or GPT-2's ``h``)."""
    base = getattr(model, "base_model", model)
    for name in ("layers", "h"):
        layers = getattr(base, name, None)
        if isinstance(layers, nn.ModuleList):
            return layers
    raise TypeError(f"{type(model).__name__}: no decoder layers found (expected base_model.layers or .h)")


def sublayer(layer: nn.Module, names: tuple[str, ...], what: str) -> nn.Module:
    """The sub-module of ``layer`` named by the first of ``names`` it has; a one-line error otherwise."""
    for name in names:
        module = getattr(layer, name, None)
        if isinstance(module, nn.Module):
            return module
    raise TypeError(f"{type(layer).__name__}: no {what} sub-layer named {' or '.join(names)}; cannot skip it")


def _zero_attention(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, None]:
    hidden = args[0] if args else kwargs["hidden_states"]
    return torch.zeros_like(hidden), None  # (every family unpacks ``output, weights``)


def _zero_mlp(*args: Any, **kwargs: Any) -> torch.Tensor:
    hidden = args[0] if args else kwargs["hidden_states"]
    return torch.zeros_like(hidden)


def check_skip(skip: SkipSet, num_layers: int) -> None:
    """One-line ``ValueError`` for a layer index outside ``0..num_layers-1``."""
    bad = [i for i in skip.attention + skip.mlp if not 0 <= i < num_layers]
    if bad:
        raise ValueError(f"skipped layers {bad} out of range: this target has decoder layers 0..{num_layers - 1}")


@contextlib.contextmanager
def skipping(model: nn.Module, skip: SkipSet) -> Iterator[None]:
    """Within the block, ``model``'s forward skips the sub-layers of ``skip`` (module docstring)."""
    layers = decoder_layers(model)
    check_skip(skip, len(layers))
    swapped = [(sublayer(layers[i], ATTENTION_NAMES, "attention"), _zero_attention) for i in skip.attention]
    swapped += [(sublayer(layers[i], MLP_NAMES, "MLP"), _zero_mlp) for i in skip.mlp]
    # a forward already set on the instance (accelerate's offload hooks wrap modules that way) comes back on exit
    before = [module.__dict__.get("forward") for module, _ in swapped]
    try:
        for module, zero in swapped:
            module.forward = zero  # (an instance attribute shadows the class's forward)
        yield
    finally:
        for (module, _), previous in zip(swapped, before):
            if previous is None:
                module.__dict__.pop("forward", None)
            else:
                module.forward = previous
