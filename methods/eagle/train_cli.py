"""``specbench train eagle [--recipe quick|full|hass] [--out DIR]``: self-distil an EAGLE draft layer on CPU
(``hass``: HASS's harmonized training, ``hass.py``).

Example: ``specbench train eagle --recipe full`` fills the cache folder ``--method-opt eagle.recipe=full``
reads; ``--curve 20k,100k,300k`` prints held-out top-1 against positions (``specbench.api.TrainerSpec``).
"""
from __future__ import annotations

import argparse

from specbench_methods.eagle.train import RECIPES, TRAIN_S_PER_POSITION, train_eagle
from specbench.api import TrainerSpec, int_at_least, register_train_command, trained_default_dir


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--draft-vocab", dest="draft_vocab", type=int_at_least(0),
                   help="tokens the draft scores (default 8192; 0 = the target's whole vocabulary)")
    r.add_argument("--align-steps", dest="align_steps", type=int_at_least(1),
                   help="HASS's aligned forwards per batch (1 = plain EAGLE; the hass recipe's 3)")
    r.add_argument("--tune-epochs", dest="tune_epochs", type=int_at_least(0),
                   help="the last epochs as HASS's second stage (top-k term, a third of the rate; the hass recipe's 4)")


register_train_command(TrainerSpec(
    "eagle", "self-distil an EAGLE draft layer from the frozen target on CPU", lambda args: RECIPES, train_eagle,
    trained_default_dir("eagle", lambda name, cfg: RECIPES.get(name)), _add_arguments, TRAIN_S_PER_POSITION,
    option="eagle.checkpoint"))
