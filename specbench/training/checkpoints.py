"""Where a trained drafter's weights come from: its default, trained on first use, or a published one.

Every trained method (EAGLE, Medusa, ReDrafter, the SpS draft) resolves its checkpoint option here:
- the default: a cache folder keyed by everything that changes the weights (target, dtype, corpora,
  recipe), trained there once by the method's trainer; complete once the trainer's last file exists;
- otherwise a folder, or a hub id ``ORG/NAME[@REVISION]`` fetched through the Hugging Face cache, whose
  repository, commit and file hashes go into the manifest (``env.artifacts["checkpoint_source"]``).

Example: ``default_dir(env, "medusa", MedusaTrainConfig())`` ->
``~/.cache/specbench/medusa/default-989d2cd391c9``, trained by ``load_or_train`` on first use.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

from specbench.models.hub import resolve_checkpoint
from specbench.paths import writable_cache_dir
from specbench.training.distill_data import DEFAULT_CORPORA
from specbench.training.recipes import QUICK, recipe_prefix

DEFAULT = "default"


def default_dir(env: Any, kind: str, recipe: Any, name: str = QUICK) -> Path:
    """``<cache>/<kind>/<prefix>-<hash>`` of the target, its dtype, ``DEFAULT_CORPORA``, ``recipe`` (a
    dataclass) and its ``name`` (``quick``: prefix ``default``, the key as before recipes had names; else
    prefix and key carry the name), so a new recipe or target trains a new default instead of reusing another's."""
    param = next(env.model.parameters())
    fields: dict[str, Any] = {"model": env.model_id, "dtype": str(param.dtype), "corpora": DEFAULT_CORPORA,
                              "recipe": dataclasses.asdict(recipe)}
    if name != QUICK:
        fields["recipe_name"] = name
    key = json.dumps(fields, sort_keys=True)
    return Path(env.cache_dir) / kind / f"{recipe_prefix(name)}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def load_or_train(checkpoint: str | None, env: Any, *, option: str, default: Callable[[], Path],
                  train: Callable[[Path], Any], done: str = "config.json", what: str = "drafter",
                  announce: bool = True, recipe: str = QUICK, minutes: float | None = None) -> Path:
    """The folder holding the weights ``checkpoint`` names (``option`` names it in errors, e.g.
    ``eagle.checkpoint``): ``"default"`` or None -> ``default()``, trained there by ``train(folder)``
    unless ``done`` exists in it (trainers write it last; an interrupted training resumes after its last
    epoch); otherwise a folder or a hub id, recorded in ``env.artifacts["checkpoint_source"]``.
    ``announce=False``: the trainer prints its own first-use message. A ``recipe`` other than quick is
    announced with its estimated ``minutes``."""
    if checkpoint in (None, DEFAULT):
        path = default()
        if not (path / done).is_file():
            writable_cache_dir(path.parent)  # an unwritable cache fails now, not after minutes of training
            if not announce:
                train(path)
                return path
            kind = option.split(".")[0]
            if recipe == QUICK:
                print(f"[{kind}] training the default {what} (once; cached in {path}); minutes on 2 CPU cores",
                      file=sys.stderr)
            else:
                print(f"[{kind}] training the {recipe}-recipe {what} (once; cached in {path}): about "
                      f"{minutes or 0:.0f} minutes on 2 CPU cores; interrupted, it resumes where it stopped",
                      file=sys.stderr)
            train(path)
        return path
    source = resolve_checkpoint(checkpoint, option)
    env.artifacts["checkpoint_source"] = source.record()
    return source.path
