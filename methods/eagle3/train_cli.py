"""``specbench train eagle3 --out DIR``: self-distil an EAGLE-3 draft from the frozen target on CPU.

Example: ``specbench train eagle3 --out /tmp/e3 --ttt-steps 7 --epochs 8`` -> a draft in the reference's
layout, used with ``--method-opt eagle3.checkpoint=/tmp/e3``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from specbench.api import (DEFAULT_CORPORA, PluginCommand, add_common_arguments, corpora_and_recipe, int_at_least,
                           positive_int, register_trainer, resolve_data_dir)


def _run(args: argparse.Namespace) -> int:
    from methods.eagle3.train import Eagle3TrainConfig, train_eagle3
    from specbench.api import load_model

    corpora, cfg = corpora_and_recipe(args, Eagle3TrainConfig, DEFAULT_CORPORA)
    loaded = load_model(args.model, "float32", args.device)
    metrics = train_eagle3(loaded.model, loaded.tokenizer, corpora, resolve_data_dir(args.data_dir), Path(args.out), cfg,
                           model_id=loaded.model_id)
    print(f"held-out top-1 per drafted depth: {metrics.get('heldout_top1_steps')}; collect {metrics['collect_s']} s, "
          f"train {metrics['train_s']} s")
    print(f"use it with: --method-opt eagle3.checkpoint={args.out}")
    return 0


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--out", required=True, help="output directory")
    r.add_argument("--corpus", help="corpus name(s), comma-separated (default sharegpt,code_alpaca,gsm8k_train)")
    r.add_argument("--tokens", type=positive_int, help="positions to collect (default 20000)")
    r.add_argument("--epochs", type=positive_int, help="passes over the data (default 4)")
    r.add_argument("--ttt-steps", dest="ttt_steps", type=positive_int,
                   help="training-time test: unrolled steps (default 5; the reference's 7)")
    r.add_argument("--draft-vocab", dest="draft_vocab", type=int_at_least(0),
                   help="tokens the draft scores (default 8192; 0 = the target's whole vocabulary)")
    r.add_argument("--head-init", dest="head_init", choices=("target", "random"),
                   help="the head's start: the target's rows (default) or a fresh init (the reference's)")
    add_common_arguments(r)


register_trainer(PluginCommand("eagle3", "self-distil an EAGLE-3 draft from the frozen target on CPU", _add_arguments,
                               _run))
