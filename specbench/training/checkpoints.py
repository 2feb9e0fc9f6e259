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

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from specbench.models.hub import resolve_checkpoint
from specbench.paths import writable_cache_dir
from specbench.training.distill_data import DEFAULT_CORPORA
from specbench.training.recipes import QUICK, recipe_key, recipe_prefix

DEFAULT = "default"


def keyed_dir(env: Any, kind: str, prefix: str, fields: dict[str, Any]) -> Path:
    """The one rule for where a trained default lives: ``<cache>/<kind>/<prefix>-<key>``, ``key`` the first 12 hex
    digits of the SHA-256 of ``fields`` (everything that changes the weights) as sorted JSON. Each method names
    its fields (``default_dir`` for most; the SpS draft and ReDrafter keep the fields their folders were first
    keyed by, so a cached default stays found).

    >>> from types import SimpleNamespace
    >>> keyed_dir(SimpleNamespace(cache_dir="/c"), "medusa", "default", {"model": "m"}).as_posix()
    '/c/medusa/default-deea0f7771b9'
    """
    key = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]
    return Path(env.cache_dir) / kind / f"{prefix}-{key}"


def default_dir(env: Any, kind: str, recipe: Any, name: str = QUICK) -> Path:
    """``keyed_dir`` of the target, its dtype, ``DEFAULT_CORPORA``, ``recipe`` (a dataclass) and its ``name``
    (``quick``: prefix ``default``, the key as before recipes had names; else prefix and key carry the name), so a
    new recipe or target trains a new default instead of reusing another's."""
    param = next(env.model.parameters())
    fields: dict[str, Any] = {"model": env.model_id, "dtype": str(param.dtype), "corpora": DEFAULT_CORPORA,
                              "recipe": recipe_key(recipe)}
    if name != QUICK:
        fields["recipe_name"] = name
    return keyed_dir(env, kind, recipe_prefix(name), fields)


def trained_default_dir(kind: str, recipe_of: Callable[[str, Any], Any],
                        folder: Callable[[Any, Any, str], Path] | None = None
                        ) -> Callable[[Any, str, Any, Sequence[str]], Path | None]:
    """A ``TrainerSpec.default_dir``: the folder of recipe ``name``'s default (``folder(env, cfg, name)``, by default
    ``default_dir(env, kind, cfg, name)``) when ``cfg`` is that recipe's (``recipe_of(name, cfg)``) and the corpora
    are ``DEFAULT_CORPORA``, else None (``specbench train`` then writes to ``--out``, not over the default).

    >>> pick = trained_default_dir("eagle", lambda name, cfg: {"quick": 1}.get(name), lambda env, cfg, name: Path(name))
    >>> pick(None, "quick", 1, DEFAULT_CORPORA), pick(None, "quick", 2, DEFAULT_CORPORA), pick(None, "quick", 1, ())
    (PosixPath('quick'), None, None)
    """
    def default(env: Any, name: str, cfg: Any, corpora: Sequence[str]) -> Path | None:
        if cfg != recipe_of(name, cfg) or tuple(corpora) != tuple(DEFAULT_CORPORA):
            return None
        return default_dir(env, kind, cfg, name) if folder is None else folder(env, cfg, name)
    return default


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
