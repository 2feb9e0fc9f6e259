"""``specbench train medusa --out DIR``: self-distil Medusa heads from the frozen target on CPU."""
from __future__ import annotations

import argparse
from pathlib import Path

from specbench.api import (
    DEFAULT_CORPORA, PluginCommand, add_common_arguments, corpora_and_recipe, positive_int, register_trainer,
    resolve_data_dir)


def _run(args: argparse.Namespace) -> int:
    from methods.medusa.train import MedusaTrainConfig, train_medusa
    from specbench.api import load_model

    corpora, cfg = corpora_and_recipe(args, MedusaTrainConfig, DEFAULT_CORPORA)
    loaded = load_model(args.model, "float32", args.device)
    metrics = train_medusa(loaded.model, loaded.tokenizer, corpora, resolve_data_dir(args.data_dir), Path(args.out), cfg,
                           model_id=loaded.model_id)
    print(f"held-out top-1 per head: {metrics.get('heldout_top1')}; collect {metrics['collect_s']} s, train {metrics['train_s']} s")
    print(f"use it with: --method-opt medusa.checkpoint={args.out}")
    return 0


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--corpus", help="corpus name(s), comma-separated (default sharegpt,code_alpaca,gsm8k_train)")
    r.add_argument("--num-heads", dest="num_heads", type=positive_int, help="heads (default 4: the default tree's depth)")
    r.add_argument("--num-layers", dest="num_layers", type=positive_int, help="residual blocks per head (default 1)")
    r.add_argument("--own-lm-head", dest="own_lm_head", action="store_true", default=None,
                   help="an LM head per head, initialised from the target's (the reference layout; K times the head cost)")
    r.add_argument("--tokens", type=positive_int, help="positions to collect (default 20000)")
    r.add_argument("--epochs", type=positive_int, help="passes over the data (default 1)")
    add_common_arguments(r)


register_trainer(PluginCommand("medusa", "self-distil Medusa heads from the frozen target on CPU", _add_arguments, _run))
