"""``specbench train medusa [--recipe quick|full] [--out DIR]``: self-distil Medusa heads on CPU.

Example: ``specbench train medusa --num-heads 5 --out /tmp/m5`` -> ``--method-opt medusa.checkpoint=/tmp/m5``;
``--recipe full`` without ``--out`` fills the cache folder ``--method-opt medusa.recipe=full`` reads.
"""
from __future__ import annotations

import argparse

from specbench_methods.medusa.train import RECIPES, TRAIN_S_PER_POSITION, train_medusa
from specbench.api import TrainerSpec, positive_int, register_train_command, trained_default_dir


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--num-heads", dest="num_heads", type=positive_int, help="heads (default 4: the default tree's depth)")
    r.add_argument("--num-layers", dest="num_layers", type=positive_int, help="residual blocks per head (default 1)")
    r.add_argument("--own-lm-head", dest="own_lm_head", action="store_true", default=None,
                   help="an LM head per head, initialised from the target's (the reference layout; K times the head cost)")


register_train_command(TrainerSpec(
    "medusa", "self-distil Medusa heads from the frozen target on CPU", lambda args: RECIPES, train_medusa,
    trained_default_dir("medusa", lambda name, cfg: RECIPES.get(name)), _add_arguments, TRAIN_S_PER_POSITION,
    option="medusa.checkpoint"))
