"""``specbench datastore build --kind dresd`` and ``specbench datastore dresd-eval`` (recall + latency)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specbench.api import DatastoreAction, register_datastore_action, register_datastore_builder, strict_json


@register_datastore_builder("dresd")
def build_cli(args: argparse.Namespace) -> int:
    """Build an OOD (corpus answers) or ``--id`` (the target's own answers) DReSD datastore."""
    from specbench.api import from_dict, parse_settings
    from specbench.api import resolve_data_dir
    from specbench_methods.dresd.datastore.build import BuildSettings, build_datastore
    from specbench.api import load_model, stop_token_ids

    settings = from_dict(BuildSettings, parse_settings(args.set), where="dresd build: ")
    corpora = [c.strip() for c in args.corpus.split(",") if c.strip()]
    data_dir = resolve_data_dir(args.data_dir)
    lm = load_model(args.model, args.dtype, args.device)
    ds = build_datastore(lm.model, lm.tokenizer, corpora, args.out, args.max_tokens, args.id, data_dir, settings,
                         lm.model_id, stop_token_ids(lm.tokenizer, lm.model))
    h = ds.header
    print(f"dresd datastore {args.out}: {len(ds)} entries, index {h['index']['type']} (nlist {h['index']['nlist']}), "
          f"corpora {','.join(corpora)}, {'ID' if args.id else 'OOD'}, hash {ds.digest}")
    return 0


def _eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--path", required=True, help="datastore directory")
    p.add_argument("--corpus", default=None, help="held-out query text (default: the datastore's first corpus)")
    p.add_argument("--queries", type=int, default=500, help="number of query positions")
    p.add_argument("--k", type=int, default=50)
    p.add_argument("--nprobe", default="1,4,8,16,32,64", help="comma-separated nprobe values")
    p.add_argument("--model", default="embedded")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--json", default=None, help="also write the results here")


def eval_cli(args: argparse.Namespace) -> int:
    """Recall@k of the stored (IVF) index vs exact search, per-query latency, and survivor rate."""
    from specbench.api import resolve_data_dir
    from specbench_methods.dresd.datastore.eval import evaluate_index
    from specbench_methods.dresd.datastore.store import DenseDatastore
    from specbench.api import load_model

    ds = DenseDatastore.load(args.path)
    lm = load_model(args.model, "float32", "cpu")
    ds.check_compatible(lm.model, lm.tokenizer)
    data_dir = resolve_data_dir(args.data_dir)
    nprobes = [int(x) for x in args.nprobe.split(",") if x]
    res = evaluate_index(ds, lm.model, lm.tokenizer, args.corpus, data_dir, args.queries, args.k, nprobes)
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(strict_json(res, indent=1), encoding="utf-8")
    return 0


register_datastore_action(DatastoreAction("dresd-eval", "DReSD index recall vs exact search and retrieval latency", _eval_args, eval_cli))
