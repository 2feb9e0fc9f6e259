"""``specbench train draft [--recipe quick|full] [--out DIR]`` (also ``specbench train sps``): distil a small
draft LM for ``sps`` from the frozen target.

Example: ``specbench train draft --layers 4 --tokens 200000 --out drafts/smol4`` then
``--methods sps --method-opt sps.draft_model=drafts/smol4``. Without ``--out`` (and without flags changing
the recipe) it fills the cache folder ``sps.draft_model=distilled`` with ``sps.recipe=RECIPE`` reads.
"""
from __future__ import annotations

import argparse

from specbench.api import DISTILL_RECIPES, DISTILL_S_PER_POSITION, STORE_SEQ_LEN, distill_draft, distilled_dir
from specbench.api import TrainerSpec, positive_int, register_train_command, trained_default_dir


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--layers", type=positive_int, help="decoder layers, copied from the target's first ones (default 2)")
    r.add_argument("--vocab", type=positive_int, help="draft vocabulary: most frequent target tokens (default 8192)")
    r.add_argument("--seq-len", dest="seq_len", type=positive_int, help="tokens per sequence (default 256)")


register_train_command(TrainerSpec(
    "draft", "distil a small draft LM for sps from the frozen target on CPU", lambda args: DISTILL_RECIPES, distill_draft,
    trained_default_dir("sps", lambda name, cfg: DISTILL_RECIPES.get(name), distilled_dir),
    _add_arguments, DISTILL_S_PER_POSITION, metric="top1_all", option="sps.draft_model", method="sps",
    aliases=("sps",), store_shape=lambda target, cfg: (max(STORE_SEQ_LEN, cfg.seq_len), ())))
