"""A trained method's weights in one call (``find_or_train``) and what its run records of them
(``record_checkpoint``): the default trained on first use from the shared feature store with the method's recipe
(``checkpoints.load_or_train``, ``default_dir``), or a folder or hub id the user named.

Example (Medusa's): ``find_or_train("medusa", config.checkpoint, config.recipe, RECIPES[config.recipe], env,
what="heads", train=train_medusa, seconds_per_position=TRAIN_S_PER_POSITION, corpora=DEFAULT_CORPORA)`` -> the
folder to load, ``~/.cache/specbench/medusa/default-...`` trained there on first use.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from specbench.training.checkpoints import DEFAULT, default_dir, load_or_train
from specbench.training.feature_store import FeatureOptions
from specbench.training.recipes import eta_minutes


def find_or_train(kind: str, checkpoint: str | None, recipe_name: str, recipe: Any, env: Any, *, what: str,
                  train: Callable[..., Any], seconds_per_position: float, corpora: Sequence[str]) -> Path:
    """The folder of the weights ``checkpoint`` names for method ``kind`` (``<kind>.checkpoint`` in errors):
    ``default`` (or None) is trained on first use with ``recipe`` (named ``recipe_name``) on ``corpora`` by
    ``train(target, tokenizer, corpora, data_dir, out, recipe, model_id, features=..., recipe=recipe_name)``; any
    other value is a folder or a hub id ``ORG/NAME[@REVISION]``. ``what`` names the weights in messages."""
    features = FeatureOptions(root=Path(env.cache_dir) / "features")
    return load_or_train(
        checkpoint, env, option=f"{kind}.checkpoint", what=what, recipe=recipe_name,
        minutes=eta_minutes(recipe.tokens, recipe.epochs, seconds_per_position),
        default=lambda: default_dir(env, kind, recipe, recipe_name),
        train=lambda out: train(env.model, env.tokenizer, corpora, env.data_dir, out, recipe, env.model_id,
                                features=features, recipe=recipe_name))


def record_checkpoint(env: Any, path: Path, meta: dict[str, Any], checkpoint: str | None, recipe_name: str,
                      **fields: Any) -> None:
    """The manifest's ``checkpoint`` artifact (``path`` first, then ``fields`` in order) and ``recipe``: the one
    trained, or the one a given checkpoint's ``meta`` (its ``config.json``) names."""
    env.artifacts["checkpoint"] = {"path": str(path), **fields}
    env.artifacts["recipe"] = recipe_name if checkpoint in (None, DEFAULT) else meta.get("recipe")
