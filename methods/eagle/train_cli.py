"""``specbench train eagle [--recipe quick|full] [--out DIR]``: self-distil an EAGLE draft layer on CPU.

Example: ``specbench train eagle --recipe full`` fills the cache folder ``--method-opt eagle.recipe=full``
reads; ``--curve 20k,100k,300k`` prints held-out top-1 against positions (``specbench.api.TrainerSpec``).
"""
from __future__ import annotations

import argparse
from typing import Any, Sequence

from methods.eagle.train import RECIPES, TRAIN_S_PER_POSITION, train_eagle
from specbench.api import DEFAULT_CORPORA, TrainerSpec, default_dir, int_at_least, register_train_command


def _default_dir(env: Any, name: str, cfg: Any, corpora: Sequence[str]) -> Any:
    same = cfg == RECIPES.get(name) and tuple(corpora) == tuple(DEFAULT_CORPORA)
    return default_dir(env, "eagle", cfg, name) if same else None


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--draft-vocab", dest="draft_vocab", type=int_at_least(0),
                   help="tokens the draft scores (default 8192; 0 = the target's whole vocabulary)")


register_train_command(TrainerSpec(
    "eagle", "self-distil an EAGLE draft layer from the frozen target on CPU", lambda args: RECIPES, train_eagle,
    _default_dir, _add_arguments, TRAIN_S_PER_POSITION, option="eagle.checkpoint"))
