"""``specbench train eagle3 [--recipe quick|full] [--out DIR]``: self-distil an EAGLE-3 draft on CPU.

Example: ``specbench train eagle3 --out /tmp/e3 --ttt-steps 7 --epochs 8`` -> a draft in the reference's
layout, used with ``--method-opt eagle3.checkpoint=/tmp/e3``; ``--recipe full`` without ``--out`` fills the
cache folder ``--method-opt eagle3.recipe=full`` reads.
"""
from __future__ import annotations

import argparse

from specbench_methods.eagle3.layer import reference_layers
from specbench_methods.eagle3.train import RECIPES, TRAIN_S_PER_POSITION, train_eagle3
from specbench.api import TrainerSpec, int_at_least, positive_int, register_train_command, trained_default_dir


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--ttt-steps", dest="ttt_steps", type=positive_int,
                   help="training-time test: unrolled steps (default 5; the reference's 7)")
    r.add_argument("--draft-vocab", dest="draft_vocab", type=int_at_least(0),
                   help="tokens the draft scores (default 8192; 0 = the target's whole vocabulary)")
    r.add_argument("--head-init", dest="head_init", choices=("target", "random"),
                   help="the head's start: the target's rows (default) or a fresh init (the reference's)")


register_train_command(TrainerSpec(
    "eagle3", "self-distil an EAGLE-3 draft from the frozen target on CPU", lambda args: RECIPES, train_eagle3,
    trained_default_dir("eagle3", lambda name, cfg: RECIPES.get(name)), _add_arguments, TRAIN_S_PER_POSITION,
    metric="heldout_top1_steps", option="eagle3.checkpoint",
    store_shape=lambda target, cfg: (cfg.max_seq_len, reference_layers(int(target.config.num_hidden_layers)))))
