"""``specbench train dflash [--recipe quick|full] [--out DIR]``: self-distil a DFlash block draft on CPU.

Example: ``specbench train dflash --out /tmp/df --layers 3 --block-size 8`` -> a draft in the reference's layout,
used with ``--method-opt dflash.checkpoint=/tmp/df``; ``--recipe full`` without ``--out`` fills the cache folder
``--method-opt dflash.recipe=full`` reads.
"""
from __future__ import annotations

import argparse

from .network import reference_layers
from .train import RECIPES, TRAIN_S_PER_POSITION, train_dflash
from specbench.api import TrainerSpec, int_at_least, positive_int, register_train_command, trained_default_dir


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--layers", dest="layers", type=positive_int, help="draft layers, one target layer tapped each (default 5)")
    r.add_argument("--block-size", dest="block_size", type=int_at_least(2), help="rows per block, the root's included (default 16)")
    r.add_argument("--anchors", dest="anchors", type=positive_int, help="blocks per sequence and epoch (default 8)")


register_train_command(TrainerSpec(
    "dflash", "self-distil a DFlash block draft from the frozen target on CPU", lambda args: RECIPES, train_dflash,
    trained_default_dir("dflash", lambda name, cfg: RECIPES.get(name)), _add_arguments, TRAIN_S_PER_POSITION,
    metric="heldout_top1_steps", option="dflash.checkpoint",
    store_shape=lambda target, cfg: (cfg.max_seq_len, reference_layers(int(target.config.num_hidden_layers), cfg.layers))))
