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
from specbench.training.distill_data import DEFAULT_CORPORA

DEFAULT = "default"


def default_dir(env: Any, kind: str, recipe: Any, prefix: str = "default") -> Path:
    """``<cache>/<kind>/<prefix>-<hash>`` of the target, its dtype, ``DEFAULT_CORPORA`` and ``recipe`` (a
    dataclass), so a new recipe or target trains a new default instead of reusing another's."""
    param = next(env.model.parameters())
    key = json.dumps({"model": env.model_id, "dtype": str(param.dtype), "corpora": DEFAULT_CORPORA,
                      "recipe": dataclasses.asdict(recipe)}, sort_keys=True)
    return Path(env.cache_dir) / kind / f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def load_or_train(checkpoint: str | None, env: Any, *, option: str, default: Callable[[], Path],
                  train: Callable[[Path], Any], done: str = "config.json", what: str = "drafter",
                  announce: bool = True) -> Path:
    """The folder holding the weights ``checkpoint`` names (``option`` names it in errors, e.g.
    ``eagle.checkpoint``): ``"default"`` or None -> ``default()``, trained there by ``train(folder)``
    unless ``done`` exists in it (trainers write it last, so an interrupted training starts again);
    otherwise a folder or a hub id, recorded in ``env.artifacts["checkpoint_source"]``. ``announce=False``:
    the trainer prints its own first-use message."""
    if checkpoint in (None, DEFAULT):
        path = default()
        if not (path / done).is_file():
            if not announce:
                train(path)
                return path
            kind = option.split(".")[0]
            print(f"[{kind}] training the default {what} (once; cached in {path}); minutes on 2 CPU cores",
                  file=sys.stderr)
            train(path)
        return path
    source = resolve_checkpoint(checkpoint, option)
    env.artifacts["checkpoint_source"] = source.record()
    return source.path
