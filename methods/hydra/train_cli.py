"""``specbench train hydra [--head prefix-mlp|mlp] [--recipe quick|full] [--out DIR]``: self-distil Hydra heads
(Hydra++ by default) on CPU.

Example: ``specbench train hydra --head mlp --out /tmp/h`` -> the paper's base heads, used with
``--method-opt hydra.checkpoint=/tmp/h``; ``--recipe full`` without ``--out`` fills the cache folder
``--method-opt hydra.recipe=full`` reads.
"""
from __future__ import annotations

import argparse
from typing import Any

from specbench_methods.hydra.train import RECIPES, TRAIN_S_PER_POSITION, recipe_for, train_hydra
from specbench.api import TrainerSpec, int_at_least, positive_int, register_train_command, trained_default_dir


def _recipes(args: argparse.Namespace) -> dict[str, Any]:
    """Each recipe of the ``--head``'s own defaults (the flags given go on top of them)."""
    return {name: recipe_for(getattr(args, "head", None) or "prefix-mlp", name) for name in RECIPES}


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--head", choices=("prefix-mlp", "mlp"),
                   help="prefix-mlp = Hydra++ (default: prefix layer, 4 blocks, teacher loss, dropout 0.2); "
                        "mlp = base Hydra (1 block, next-token loss, no dropout)")
    r.add_argument("--num-heads", dest="num_heads", type=positive_int, help="heads (default 4: the default tree's depth)")
    r.add_argument("--num-layers", dest="num_layers", type=positive_int, help="blocks per head (default: the head's recipe)")
    r.add_argument("--loss", choices=("teacher", "lm"), help="teacher: the target's distribution; lm: the text's next token")
    r.add_argument("--dropout", type=float, help="dropout before every block and LM head (default: the head's recipe)")
    r.add_argument("--draft-vocab", dest="draft_vocab", type=int_at_least(0),
                   help="tokens the shared head scores (default 8192; 0 = the target's whole vocabulary)")


register_train_command(TrainerSpec(
    "hydra", "self-distil Hydra heads from the frozen target on CPU", _recipes, train_hydra,
    trained_default_dir("hydra", lambda name, cfg: recipe_for(cfg.head, name)),
    _add_arguments, TRAIN_S_PER_POSITION, option="hydra.checkpoint"))
