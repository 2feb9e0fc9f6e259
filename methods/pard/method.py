"""Config, drafter and registration of ``pard`` (PARD: parallel draft model adaptation, AMD 2025).

The draft is a small LM adapted to guess K tokens in one forward (``runner.py``): after the tokens it has not seen
it reads ``K - 1`` mask tokens, and its last K rows are the chain. By default it is the SpS draft distilled from the
target (``sps``'s, trained once on first use) adapted by PARD's training (``adapt.py``, on first use too); a
published PARD checkpoint (its config names ``pard_token``) of the target's tokenizer also works.

Example: ``--methods sps,pard`` compares the AR draft (``gamma`` forwards a step) with the same draft made parallel
(one forward a step, 12 tokens).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specbench.api import (DEFAULT_CORPORA, DISTILL_META_FILE, DISTILL_RECIPES, DISTILL_S_PER_POSITION, BaseDrafter,
                           ConfigError, DraftContext, DraftTree, FeatureOptions, MethodEnv, check_recipe, distill_draft,
                           distill_refusal, distilled_dir, eta_minutes, is_hub_id, keyed_dir, load_distilled,
                           load_or_train, register_method, register_model_requirement, resolve_backend,
                           resolve_checkpoint, stop_token_ids)

from specbench_methods.pard.adapt import META_FILE, RECIPES, TRAIN_S_PER_POSITION, adapt_draft
from specbench_methods.pard.runner import ParallelRunner

TRAINED = "trained"


@dataclass(frozen=True)
class PardConfig:
    """``k`` is the reference's evaluation setting (``draft_k`` 12 in its configs, with drafts trained on 8 copies);
    ``recipe`` of the adaptation: ``quick`` (first use, minutes) or ``full``."""

    draft_model: str = TRAINED  # "trained" (sps's distilled draft, adapted on first use), a PARD folder or hub id
    k: int = 12
    recipe: str = "quick"

    def validate(self) -> None:
        check_recipe("pard", self.recipe, RECIPES)
        if self.k < 1:
            raise ConfigError("pard: k must be >= 1")
        if not self.draft_model:
            raise ConfigError("pard needs a draft: pard.draft_model=trained, a PARD checkpoint folder or hub id")


class PardDrafter(BaseDrafter):
    """Proposes the parallel draft's chain of ``k`` tokens, one draft forward per step."""

    reads_hidden_states = False  # (drafts from tokens alone)

    def __init__(self, config: PardConfig, runner: ParallelRunner) -> None:
        self.config, self.runner = config, runner

    def begin(self, prompt_ids: list[int]) -> None:
        self.runner.reset()

    def propose(self, ctx: DraftContext) -> DraftTree | None:
        k = min(self.config.k, ctx.max_depth)
        return DraftTree.chain(self.runner.draft(ctx.tokens, k)) if k >= 1 else None


_LOADED: dict[tuple[str, str, str, int], tuple[Any, int, np.ndarray | None]] = {}


def adapted_dir(env: MethodEnv, name: str) -> Path:
    """The cache folder of the target's adapted draft, keyed by model, corpora, the base draft's recipe and PARD's."""
    fields = {"model": env.model_id, "corpora": DEFAULT_CORPORA, "recipe": dataclasses.asdict(RECIPES[name]),
              "base": dataclasses.asdict(DISTILL_RECIPES["quick"])}
    return keyed_dir(env, "pard", "adapted" if name == "quick" else f"adapted-{name}", fields)


def _trained(env: MethodEnv, name: str) -> tuple[Any, int, np.ndarray]:
    base_recipe = DISTILL_RECIPES["quick"]
    features = FeatureOptions(root=Path(env.cache_dir) / "features")
    base = load_or_train(None, env, option="pard.draft_model", what="AR draft (sps's, distilled from the target)",
                         done=DISTILL_META_FILE, default=lambda: distilled_dir(env, base_recipe, "quick"),
                         minutes=eta_minutes(base_recipe.tokens, base_recipe.epochs, DISTILL_S_PER_POSITION),
                         train=lambda out: distill_draft(env.model, env.tokenizer, DEFAULT_CORPORA, env.data_dir, out,
                                                         base_recipe, env.model_id, features=features, recipe="quick"))
    cfg = RECIPES[name]
    out = load_or_train(None, env, option="pard.draft_model", what="parallel draft (PARD's adaptation)", done=META_FILE,
                        recipe=name, minutes=eta_minutes(cfg.tokens, cfg.epochs, TRAIN_S_PER_POSITION, collect=False),
                        default=lambda: adapted_dir(env, name),
                        train=lambda out: adapt_draft(base, env.model, env.tokenizer, DEFAULT_CORPORA, env.data_dir,
                                                      out, cfg, env.model_id, features=features, recipe=name))
    param = next(env.model.parameters())
    loaded = load_distilled(out, param.device, param.dtype)
    assert loaded is not None  # complete: its metadata is written before META_FILE, which is written last
    mask_id = int(json.loads((out / META_FILE).read_text(encoding="utf-8"))["mask_id"])
    return loaded[0], mask_id, loaded[1]


def _published(name: str, env: MethodEnv) -> tuple[Any, int, None]:
    from specbench.api import ModelLoadError, load_model

    path = str(resolve_checkpoint(name, "pard.draft_model").path) if is_hub_id(name) else name
    param = next(env.model.parameters())
    try:
        lm = load_model(path, str(param.dtype).removeprefix("torch."), str(param.device))
    except ModelLoadError as e:
        raise ConfigError(f"pard: draft model {name!r}: {e}") from None
    mask = getattr(lm.model.config, "pard_token", None)
    if mask is None:
        raise ConfigError(f"pard: {name!r} is not a PARD draft (its config names no pard_token)")
    if env.tokenizer is not None and lm.tokenizer is not None and lm.tokenizer.get_vocab() != env.tokenizer.get_vocab():
        raise ConfigError(f"pard: draft model {name!r} has another tokenizer than the target; PARD needs the same one")
    return lm.model.eval(), int(mask), None


def load_parallel_draft(config: PardConfig, env: MethodEnv) -> tuple[Any, int, np.ndarray | None]:
    """(draft model on the target's device and dtype, its mask id, its vocabulary map or None), once per process."""
    param = next(env.model.parameters())
    key = (config.draft_model if config.draft_model != TRAINED else f"{TRAINED}@{config.recipe}", str(param.dtype),
           str(param.device), id(env.model))
    if key not in _LOADED:
        draft = _trained(env, config.recipe) if config.draft_model == TRAINED else _published(config.draft_model, env)
        resolve_backend("auto", param.device, param.dtype).prepare(draft[0])  # (packed linears on CPU, as the target's)
        _LOADED[key] = draft
    return _LOADED[key]


@register_model_requirement("pard")
def pard_needs(config: PardConfig, model: Any) -> str | None:
    """The trained default adapts sps's distilled draft, the target's own architecture cut short: Llama-style only."""
    why = distill_refusal(model) if config.draft_model == TRAINED else None
    if why is None:
        return None
    return f"{why}; give it a PARD checkpoint of the target's tokenizer (pard.draft_model=HF_ID or DIR)"


@register_method("pard", PardConfig)
def build_pard(config: PardConfig, env: MethodEnv) -> PardDrafter:
    """Speculative decoding with a parallel draft: K tokens per draft forward (default: sps's draft, adapted)."""
    model, mask_id, vocab = load_parallel_draft(config, env)
    env.artifacts["draft_model"] = config.draft_model
    if config.draft_model == TRAINED:
        env.artifacts["recipe"] = config.recipe
    stops = frozenset(stop_token_ids(env.tokenizer, env.model)) if env.tokenizer is not None else frozenset()
    return PardDrafter(config, ParallelRunner(model, mask_id, vocab, int(env.model.config.vocab_size), stops))
