"""``specbench train redrafter [--recipe quick|paper|full] [--corpus NAME[,NAME]] [--out DIR]``: train a draft head.

Progress bars for the target pass (the shared feature store) and the training steps; a checkpoint of the
training state every ``--checkpoint-every`` steps; re-running the same command resumes. Without ``--out``
(and without flags changing the recipe) it fills the cache folder ``--method-opt redrafter.recipe=RECIPE``
reads.
"""
from __future__ import annotations

import argparse
from typing import Any, Sequence

from specbench_methods.redrafter.config import RECIPES, ReDrafterConfig
from specbench.api import TrainerSpec, positive_int, register_train_command


def _recipes(args: argparse.Namespace) -> dict[str, Any]:
    """Each recipe's positions and epochs in a ``TrainConfig`` (the head's flags go on top)."""
    from specbench_methods.redrafter.train import TrainConfig

    return {name: TrainConfig(tokens=tokens, epochs=epochs) for name, (tokens, epochs) in RECIPES.items()}


def _default_dir(env: Any, name: str, cfg: Any, corpora: Sequence[str]) -> Any:
    from specbench_methods.redrafter.method import default_checkpoint_dir, default_train_config

    config = ReDrafterConfig(recipe=name, n_predict=cfg.n_predict, proj=cfg.proj, num_blocks=cfg.num_blocks,
                             default_corpus=",".join(corpora))
    return default_checkpoint_dir(env, config) if cfg == default_train_config(config) else None


def _train(*args: Any, **kwargs: Any) -> dict[str, Any]:
    from specbench_methods.redrafter.train import train_redrafter

    return train_redrafter(*args, **kwargs)


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--n-predict", dest="n_predict", type=positive_int, help="predicted positions per example (default 3)")
    r.add_argument("--labels", choices=("target", "ground_truth"), help="distil the target's argmax (default) or the corpus tokens")
    r.add_argument("--warmup", type=float, help="warmup fraction of the steps (default 0.1)")
    r.add_argument("--max-seq-len", dest="max_seq_len", type=positive_int)
    r.add_argument("--num-blocks", dest="num_blocks", type=positive_int, help="ResNet blocks (default 1)")
    r.add_argument("--no-proj", dest="proj", action="store_false", default=None, help="keep 2h-wide features (the reference layout)")
    r.add_argument("--checkpoint-every", dest="checkpoint_every", type=positive_int)


register_train_command(TrainerSpec(
    "redrafter", "self-distil a ReDrafter head from the frozen target on CPU", _recipes, _train, _default_dir,
    _add_arguments, train_s_per_position=0.0, option="redrafter.checkpoint",
    default_corpora=tuple(ReDrafterConfig().default_corpus.split(","))))
