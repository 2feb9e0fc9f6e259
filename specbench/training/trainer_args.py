"""What every ``specbench train METHOD`` command reads from its arguments: corpora and a recipe.

Example: ``--corpus sharegpt,gsm8k_train --epochs 2`` with recipe class ``R`` ->
``(["sharegpt", "gsm8k_train"], R(epochs=2))`` (flags left out keep the recipe's defaults).
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Sequence


def corpora_and_recipe(args: argparse.Namespace, recipe_cls: Any, default_corpora: Sequence[str]) -> tuple[list[str], Any]:
    """The corpora named by ``--corpus`` (default ``default_corpora``), checked, and the validated recipe."""
    from specbench.datastore.corpora import PAIR_LOADERS

    corpora = [c.strip() for c in (args.corpus or ",".join(default_corpora)).split(",") if c.strip()]
    bad = [c for c in corpora if c not in PAIR_LOADERS]
    if not corpora or bad:
        raise FileNotFoundError(f"unknown corpus {', '.join(bad) or '(none)'} (known: {', '.join(sorted(PAIR_LOADERS))})")
    fields = {f.name for f in dataclasses.fields(recipe_cls)}
    recipe = recipe_cls(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    recipe.validate()
    return corpora, recipe


def add_common_arguments(r: argparse.ArgumentParser) -> None:
    """Flags every trainer shares: optimisation basics and which target to distil from."""
    from specbench.config.argtypes import positive_float, positive_int

    r.add_argument("--batch-size", dest="batch_size", type=positive_int)
    r.add_argument("--lr", type=positive_float)
    r.add_argument("--seed", type=int)
    r.add_argument("--model", default="embedded", help="target model: 'embedded', a HF id or a directory")
    r.add_argument("--device", default="cpu")
    r.add_argument("--data-dir", default=None)
