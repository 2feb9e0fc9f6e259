"""``specbench train hydra --out DIR``: self-distil Hydra heads (Hydra++ by default) from the frozen target on CPU."""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from specbench.api import (DEFAULT_CORPORA, PluginCommand, add_common_arguments, corpora_and_recipe, int_at_least,
                           positive_int, register_trainer, resolve_data_dir)


def _run(args: argparse.Namespace) -> int:
    from methods.hydra.train import HydraTrainConfig, recipe_for, train_hydra
    from specbench.api import load_model

    corpora, cfg = corpora_and_recipe(args, HydraTrainConfig, DEFAULT_CORPORA)
    if args.head:  # the head's own recipe, then the flags given on top of it
        given = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if getattr(args, f.name, None) is not None}
        cfg = dataclasses.replace(recipe_for(args.head), **given)
        cfg.validate()
    loaded = load_model(args.model, "float32", args.device)
    metrics = train_hydra(loaded.model, loaded.tokenizer, corpora, resolve_data_dir(args.data_dir), Path(args.out), cfg,
                          model_id=loaded.model_id)
    print(f"held-out top-1 per head: {metrics.get('heldout_top1')}; collect {metrics['collect_s']} s, "
          f"train {metrics['train_s']} s")
    print(f"use it with: --method-opt hydra.checkpoint={args.out}")
    return 0


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--corpus", help="corpus name(s), comma-separated (default sharegpt,code_alpaca,gsm8k_train)")
    r.add_argument("--head", choices=("prefix-mlp", "mlp"),
                   help="prefix-mlp = Hydra++ (default: prefix layer, 4 blocks, teacher loss, dropout 0.2); "
                        "mlp = base Hydra (1 block, next-token loss, no dropout)")
    r.add_argument("--num-heads", dest="num_heads", type=positive_int, help="heads (default 4: the default tree's depth)")
    r.add_argument("--num-layers", dest="num_layers", type=positive_int, help="blocks per head (default: the head's recipe)")
    r.add_argument("--loss", choices=("teacher", "lm"), help="teacher: the target's distribution; lm: the text's next token")
    r.add_argument("--dropout", type=float, help="dropout before every block and LM head (default: the head's recipe)")
    r.add_argument("--tokens", type=positive_int, help="positions to collect (default 20000)")
    r.add_argument("--epochs", type=positive_int, help="passes over the data (default 4)")
    r.add_argument("--draft-vocab", dest="draft_vocab", type=int_at_least(0),
                   help="tokens the shared head scores (default 8192; 0 = the target's whole vocabulary)")
    add_common_arguments(r)


register_trainer(PluginCommand("hydra", "self-distil Hydra heads from the frozen target on CPU", _add_arguments, _run))
