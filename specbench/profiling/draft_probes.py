"""Helpers methods use to declare their drafter's model to a device profile (``draft_cost.py``), behind the api.

- ``config_shape()``: a ``shape`` function keeping the config fields that change what a drafting step computes
  (the draft model, tree widths, head vocabulary, dtype), without those that only choose trained values
  (``TRAINING_ONLY``: checkpoint, training recipe and corpora) and those a method names (``gamma``, ``k``: the
  draft length a step asks for, which the profile varies itself);
- ``distilled_shape``: the shape of SpS's and PARD's draft model option (the distilled default's layers and
  vocabulary, else the named model);
- ``random_distilled_draft``: a random LM of the distilled draft's shape, so a profile times SpS and PARD with no
  training and no download.

Only ratios of two machines' timings reach a projection, so a random probe must do the work the trained drafter
does, not find the same drafts.

>>> config_shape("gamma")({"gamma": 5, "checkpoint": "default", "vocab": "trained", "tree": "dynamic"})
{'tree': 'dynamic', 'vocab': 'trained'}
>>> distilled_shape("distilled", "quick")
{'draft': 'distilled', 'layers': 2, 'draft_vocab': 8192}
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from specbench.profiling.draft_cost import DEPTHS

DEEPEST = max(DEPTHS)  # the deepest draft a profile asks a drafter for
TRAINING_ONLY = ("checkpoint", "recipe", "default_tokens", "default_corpus", "n_predict")
DISTILLED = ("distilled", "trained")  # sps's and pard's names of the distilled default draft


def config_shape(*drop: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A ``shape`` function: the config, sorted, without ``TRAINING_ONLY`` and ``drop``."""
    def shape(config: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in sorted(config.items()) if k not in TRAINING_ONLY + drop}
    return shape


def distilled_shape(draft_model: str, recipe: str) -> dict[str, Any]:
    """The draft model a ``draft_model`` option names: the distilled default's layers and vocabulary, else its name."""
    from specbench.training.draft_distill import DISTILL_RECIPES

    if draft_model in DISTILLED:
        r = DISTILL_RECIPES.get(recipe) or DISTILL_RECIPES["quick"]
        return {"draft": "distilled", "layers": r.layers, "draft_vocab": r.vocab}
    return {"draft": draft_model}


def random_distilled_draft(target: Any, recipe: str = "quick", extra_tokens: int = 0) -> tuple[Any, np.ndarray]:
    """(a random LM of the distilled draft's shape on the target's device and dtype, its draft -> target id map):
    the target's architecture with the recipe's layers and vocabulary (+ ``extra_tokens``, PARD's mask), its ids
    the target's first ones, prepared as sps and pard prepare theirs (packed linears on CPU)."""
    import torch
    from transformers import AutoModelForCausalLM

    from specbench.engine.backends.torch_backends import resolve_backend
    from specbench.training.draft_distill import DISTILL_RECIPES

    r = DISTILL_RECIPES.get(recipe) or DISTILL_RECIPES["quick"]
    size = min(r.vocab, int(target.config.vocab_size))  # (a tiny test target has fewer tokens than the recipe keeps)
    cfg = target.config.__class__.from_dict(target.config.to_dict())
    cfg.num_hidden_layers, cfg.vocab_size, cfg.tie_word_embeddings = r.layers, size + extra_tokens, True
    param = next(target.parameters())
    torch.manual_seed(0)
    draft = AutoModelForCausalLM.from_config(cfg).to(param.device, param.dtype).eval()
    resolve_backend("auto", param.device, param.dtype).prepare(draft)
    return draft, np.arange(size, dtype=np.int64)
