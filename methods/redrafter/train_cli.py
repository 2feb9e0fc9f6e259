"""``specbench train redrafter --corpus NAME[,NAME] [--recipe quick|paper] --out DIR``: train a draft head.

Progress bars for the target forward pass and the training steps; a checkpoint of the training state
every ``--checkpoint-every`` steps; re-running the same command resumes (collected data are reused).
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from methods.redrafter.config import RECIPES
from specbench.api import PluginCommand, positive_float, positive_int, register_trainer, resolve_data_dir

if TYPE_CHECKING:
    from methods.redrafter.train import TrainConfig


def train_config_from_args(args: argparse.Namespace) -> "TrainConfig":
    """The recipe's tokens and epochs, overridden by any ``TrainConfig`` field given as a flag."""
    from methods.redrafter.train import TrainConfig

    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    tokens, epochs = RECIPES[args.recipe]
    opts = {"tokens": tokens, "epochs": epochs, **{k: v for k, v in vars(args).items() if k in fields and v is not None}}
    cfg = TrainConfig(**opts)
    cfg.validate()
    return cfg


def _run(args: argparse.Namespace) -> int:
    from methods.redrafter.train import train_redrafter
    from specbench.api import PAIR_LOADERS, load_model

    corpora = [c.strip() for c in args.corpus.split(",") if c.strip()]
    known = set(PAIR_LOADERS) | {"python_stdlib"}
    bad = [c for c in corpora if c not in known]
    if not corpora or bad:
        raise FileNotFoundError(f"unknown corpus {', '.join(bad) or '(none)'} (known: {', '.join(sorted(known))})")
    cfg = train_config_from_args(args)
    loaded = load_model(args.model, "float32", args.device)
    data_dir = resolve_data_dir(args.data_dir)
    print(f"[specbench] training a redrafter head on {','.join(corpora)}: {cfg.tokens} examples, {cfg.epochs} epoch(s); "
          f"ETA ~{cfg.eta_minutes():.0f} min on 2 CPU cores -> {args.out}")
    metrics = train_redrafter(loaded.model, loaded.tokenizer, corpora, data_dir, Path(args.out), cfg, model_id=loaded.model_id)
    print(f"held-out top-1 accuracy per predicted position: {metrics.get('heldout_top1')}")
    print(f"use it with: --method-opt redrafter.checkpoint={args.out}")
    return 0


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--corpus", required=True, help="corpus name(s), comma-separated: sharegpt, code_alpaca, gsm8k_train, python_stdlib")
    r.add_argument("--recipe", choices=tuple(RECIPES), default="quick",
                   help="budget: " + "; ".join(f"{k} = {t} positions, {e} epoch(s)" for k, (t, e) in RECIPES.items())
                   + " (--tokens/--epochs override it)")
    r.add_argument("--tokens", type=positive_int, help="training examples (token positions) to collect (default: the recipe's)")
    r.add_argument("--epochs", type=positive_int, help="passes over the collected data (default: the recipe's)")
    r.add_argument("--out", required=True, help="output directory (checkpoint; re-run to resume)")
    r.add_argument("--n-predict", dest="n_predict", type=positive_int, help="predicted positions per example (default 3)")
    r.add_argument("--labels", choices=("target", "ground_truth"), help="distil the target's argmax (default) or the corpus tokens")
    r.add_argument("--batch-size", dest="batch_size", type=positive_int)
    r.add_argument("--lr", type=positive_float)
    r.add_argument("--warmup", type=float, help="warmup fraction of the steps (default 0.1)")
    r.add_argument("--max-seq-len", dest="max_seq_len", type=positive_int)
    r.add_argument("--num-blocks", dest="num_blocks", type=positive_int, help="ResNet blocks (default 1)")
    r.add_argument("--no-proj", dest="proj", action="store_false", default=None, help="keep 2h-wide features (the reference layout)")
    r.add_argument("--checkpoint-every", dest="checkpoint_every", type=positive_int)
    r.add_argument("--seed", type=int)
    r.add_argument("--model", default="embedded", help="target model: 'embedded', a HF id or a directory")
    r.add_argument("--device", default="cpu")
    r.add_argument("--data-dir", default=None)


register_trainer(PluginCommand("redrafter", "self-distil a ReDrafter head from the frozen target on CPU", _add_arguments, _run))
