"""``specbench train eagle --out DIR``: self-distil an EAGLE draft layer from the frozen target on CPU."""
from __future__ import annotations

import argparse
from pathlib import Path

from specbench.api import (DEFAULT_CORPORA, PluginCommand, add_common_arguments, corpora_and_recipe, int_at_least,
                           positive_int, register_trainer, resolve_data_dir)


def _run(args: argparse.Namespace) -> int:
    from methods.eagle.train import EagleTrainConfig, train_eagle
    from specbench.api import load_model

    corpora, cfg = corpora_and_recipe(args, EagleTrainConfig, DEFAULT_CORPORA)
    loaded = load_model(args.model, "float32", args.device)
    metrics = train_eagle(loaded.model, loaded.tokenizer, corpora, resolve_data_dir(args.data_dir), Path(args.out), cfg,
                          model_id=loaded.model_id)
    print(f"held-out top-1 (first draft token): {metrics.get('heldout_top1')}; collect {metrics['collect_s']} s, "
          f"train {metrics['train_s']} s")
    print(f"use it with: --method-opt eagle.checkpoint={args.out}")
    return 0


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--corpus", help="corpus name(s), comma-separated (default sharegpt,code_alpaca,gsm8k_train)")
    r.add_argument("--tokens", type=positive_int, help="positions to collect (default 20000)")
    r.add_argument("--epochs", type=positive_int, help="passes over the data (default 10)")
    r.add_argument("--draft-vocab", dest="draft_vocab", type=int_at_least(0),
                   help="tokens the draft scores (default 8192; 0 = the target's whole vocabulary)")
    add_common_arguments(r)


register_trainer(PluginCommand("eagle", "self-distil an EAGLE draft layer from the frozen target on CPU", _add_arguments, _run))
