"""Config, drafter and registration of ``dflash`` (Chen et al. 2026): a block drafter that drafts a whole chain in
one forward pass of a few layers, conditioned on target hidden states.

Each step the drafter reads the tapped target layers' states of the positions kept since the last step
(``DraftContext.layer_states``: the engine collects them because the drafter declares ``feature_layers``), fuses
them and appends each layer's context keys and values to its caches (they never change, so they are computed
once per position). It then runs the block ``[root, MASK x (B - 1)]`` at positions ``P .. P + B - 1`` through its
layers, every block row seeing the whole context and the whole block, and proposes the chain of the target head's
argmax at rows ``1 .. B - 1`` (cut to ``max_depth``). The block's own keys are never cached.

Example: the embedded 30-layer SmolLM2, prompt of 40 tokens, root ``t``: the first step fuses ``[40, 5, 576]``
states of layers (2, 9, 15, 21, 28) into 40 cached rows per draft layer, runs one forward over 16 block rows at
positions 40..55 and proposes a chain of 15 tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .checkpoint import load_draft, new_draft
from .network import DFlashDraft
from .train import RECIPES, TRAIN_S_PER_POSITION, train_dflash
from specbench.api import (BaseDrafter, ConfigError, DEFAULT_CORPORA, DTYPES, DraftCache, DraftContext, DraftTree,
                           MethodEnv, PendingBuild, check_recipe, default_dir, draft_dtype, eta_minutes, find_or_train,
                           pack_for_inference, record_checkpoint, register_first_use_build, register_method)


@dataclass(frozen=True)
class DFlashConfig:
    """``checkpoint``: ``default`` (self-distilled on first use, cached), ``random`` (untrained; for tests), a folder
    or a hub id (ours, or a published DFlash draft in the reference's layout). ``block_size``: rows per drafted
    block, the root's included (0 = the draft's own: 16 for ours; a smaller one drafts fewer tokens, as the
    reference's ``block_size`` argument). ``dtype`` of the draft's weights: ``auto`` = bfloat16 on a CPU with oneDNN
    bf16 kernels, else the target's dtype. ``recipe`` of the default draft: ``quick`` or ``full`` (``train.RECIPES``)."""

    checkpoint: str = "default"
    block_size: int = 0
    dtype: str = "auto"
    recipe: str = "quick"

    def validate(self) -> None:
        check_recipe("dflash", self.recipe, RECIPES)
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise ConfigError(f"dflash: dtype must be auto or one of {', '.join(DTYPES)}")
        if self.block_size == 1 or self.block_size < 0:
            raise ConfigError("dflash: block_size must be 0 (the draft's own) or >= 2")


class DFlashDrafter(BaseDrafter):
    def __init__(self, draft: DFlashDraft, block_size: int = 0) -> None:
        self.draft = draft.eval()
        self.feature_layers = draft.feature_layers  # the engine hands their states over as DraftContext.layer_states
        self.block_size = block_size or draft.block_size
        param = next(draft.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.caches = [DraftCache() for _ in draft.layers]

    def begin(self, prompt_ids: list[int]) -> None:
        self.caches = [DraftCache() for _ in self.draft.layers]

    @torch.inference_mode()
    def propose(self, ctx: DraftContext) -> DraftTree | None:
        logits = self.block_logits(ctx)
        return None if logits is None else self.tree_of(logits)

    def tree_of(self, logits: torch.Tensor) -> DraftTree:
        """The draft from the block rows' logits ``[depth, V]``: DFlash's chain of their argmax (``ddtree``'s
        drafter builds a tree from the same rows instead)."""
        return DraftTree.chain(logits.argmax(-1).tolist())

    def block_logits(self, ctx: DraftContext) -> torch.Tensor | None:
        """The target head's logits at block rows ``1 .. depth`` (``[depth, V]``, ``depth = min(B - 1,
        max_depth)``), after appending the new rows' context keys and values; None when no row can be used."""
        if ctx.layer_states is None:
            raise RuntimeError("dflash: the engine delivered no layer states (feature_layers not honoured)")
        k, P = ctx.layer_states.shape[0], len(ctx.tokens) - 1  # the root sits at position P
        if self.caches[0].length != P - k:
            raise RuntimeError(f"dflash: draft cache holds {self.caches[0].length} rows, expected {P - k}")
        dev, draft = self.device, self.draft
        context = draft.context(ctx.layer_states.to(dev, self.dtype))  # [k, h]
        for cache, (keys, values) in zip(self.caches, draft.context_kv(context, torch.arange(P - k, P, device=dev))):
            cache.append(keys, values)  # [KV, k, d] each
        depth = min(self.block_size - 1, ctx.max_depth)
        if depth < 1:
            return None
        ids = torch.full((self.block_size,), draft.mask_token_id, dtype=torch.long, device=dev)
        ids[0] = ctx.tokens[-1]
        kv = [(c.k[:, : c.length], c.v[:, : c.length]) for c in self.caches]  # type: ignore[index]
        out = draft(ids, torch.arange(P, P + self.block_size, device=dev), kv)  # [B, h]: one pass, no mask
        return draft.logits(out[1 : 1 + depth])  # only the rows the engine can use are scored


def trained_draft(config: DFlashConfig, env: MethodEnv) -> DFlashDraft:
    """The draft ``config.checkpoint`` names: ``random`` (tests), ``default`` (self-distilled on first use with
    ``config.recipe``), a folder or a hub id (``specbench.api.find_or_train``)."""
    target, checkpoint = env.model, config.checkpoint
    recipe = RECIPES[config.recipe]
    if checkpoint == "random":  # untrained, as training starts, in the recipe's shape
        torch.manual_seed(0)
        return new_draft(target, recipe.layers, recipe.block_size, recipe.mask_token)
    path = find_or_train("dflash", checkpoint, config.recipe, recipe, env, what="DFlash draft", train=train_dflash,
                         seconds_per_position=TRAIN_S_PER_POSITION, corpora=DEFAULT_CORPORA)
    draft, meta = load_draft(path, target)
    record_checkpoint(env, path, meta, checkpoint, config.recipe, metrics=meta.get("metrics"),
                      weights_sha256=meta.get("weights_sha256"), feature_layers=list(draft.feature_layers),
                      block_size=draft.block_size, draft_layers=len(draft.layers))
    return draft


def ready_draft(config: DFlashConfig, env: MethodEnv) -> DFlashDraft:
    """``trained_draft``, declared as the run's overhead, on the target's device in ``config.dtype``, packed: what
    ``dflash`` and ``ddtree`` (``ddtree.py``: the same draft, a tree from its block) draft with."""
    draft = trained_draft(config, env)
    env.declare_overhead(parameters=draft.parameter_count())
    draft = draft.to(next(env.model.parameters()).device, draft_dtype(config.dtype, env.model))
    pack_for_inference(draft)
    return draft


@register_method("dflash", DFlashConfig)
def build_dflash(config: DFlashConfig, env: MethodEnv) -> DFlashDrafter:
    """DFlash's block drafter: a chain of ``block_size - 1`` tokens per forward, over tapped target features."""
    return DFlashDrafter(ready_draft(config, env), config.block_size)


@register_first_use_build("dflash")  # (and ``ddtree``, whose default draft is this one)
def dflash_first_use(config: DFlashConfig, env: MethodEnv) -> PendingBuild | None:
    """The default draft ``build_dflash`` would train now (None: trained, or another checkpoint is named)."""
    if config.checkpoint not in (None, "default"):
        return None
    recipe = RECIPES[config.recipe]
    path: Path = default_dir(env, "dflash", recipe, config.recipe)
    if (path / "config.json").is_file():
        return None
    return PendingBuild(f"train dflash's {config.recipe} recipe",
                        eta_minutes(recipe.tokens, recipe.epochs, TRAIN_S_PER_POSITION) * 60, str(path))
