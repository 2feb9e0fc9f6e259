"""``specbench train draft --out DIR``: distil a small draft LM for ``sps`` from the frozen target.

Example: ``specbench train draft --layers 4 --tokens 200000 --out drafts/smol4`` then
``--methods sps --method-opt sps.draft_model=drafts/smol4``. Without ``--out`` it fills the cache entry
that ``sps.draft_model=distilled`` uses (only with the default recipe).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from specbench.api import (
    DEFAULT_CORPORA, PluginCommand, add_common_arguments, corpora_and_recipe, positive_int, register_trainer,
    resolve_data_dir)


def _run(args: argparse.Namespace) -> int:
    from methods.sps.distill import DistillConfig, distill_draft
    from specbench.api import load_model

    corpora, cfg = corpora_and_recipe(args, DistillConfig, DEFAULT_CORPORA)
    loaded = load_model(args.model, "float32", args.device)
    print(f"[specbench] distilling a {cfg.layers}-layer draft ({cfg.vocab} tokens) from {loaded.model_id} on "
          f"{','.join(corpora)}: {cfg.tokens} answer tokens, {cfg.epochs} epoch(s) -> {args.out}")
    metrics = distill_draft(loaded.model, loaded.tokenizer, corpora, resolve_data_dir(args.data_dir), Path(args.out), cfg,
                            model_id=loaded.model_id)
    print(f"held-out top-1 agreement with the target: {metrics.get('top1_all')}; "
          f"collect {metrics['collect_s']} s, train {metrics['train_s']} s")
    print(f"use it with: --method-opt sps.draft_model={args.out}")
    return 0


def _add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--out", required=True, help="output directory (a transformers model folder + vocab.npy)")
    r.add_argument("--corpus", help="corpus name(s), comma-separated (default sharegpt,code_alpaca,gsm8k_train)")
    r.add_argument("--layers", type=positive_int, help="decoder layers, copied from the target's first ones (default 2)")
    r.add_argument("--vocab", type=positive_int, help="draft vocabulary: most frequent target tokens (default 8192)")
    r.add_argument("--tokens", type=positive_int, help="answer tokens to collect (default 60000)")
    r.add_argument("--epochs", type=positive_int, help="passes over the collected data (default 1)")
    r.add_argument("--seq-len", dest="seq_len", type=positive_int, help="tokens per sequence (default 256)")
    add_common_arguments(r)


register_trainer(PluginCommand("draft", "distil a small draft LM for sps from the frozen target on CPU", _add_arguments, _run))
