"""``specbench merge SHARD_DIR... --out DIR``: merge ``--shard k/N`` run folders into one run."""
from __future__ import annotations

import argparse

from specbench.config.argtypes import out_folder
from specbench.errors import UserError


def merge_command(args: argparse.Namespace) -> int:
    from specbench.results.merge import MergeError, merge_runs

    try:
        merged = merge_runs(args.run_dirs, args.out, force=args.force, partial=args.partial)
    except MergeError as e:
        raise UserError(str(e)) from None
    n = sum(len(v) for v in merged["questions"].values())
    print(f"merged {len(args.run_dirs)} shards ({n} questions) into {args.out}")
    partial = merged.get("partial")
    if partial:
        print(f"PARTIAL (--partial): {partial['records']} of {partial['planned']} planned records merged; "
              + "; ".join(partial["shards"]))
    for name in merged.get("merge_unchecked_shards", []):
        print(f"warning: {name} lists no planned questions (an older manifest): whether it finished cannot be checked")
    for line in merged.get("merge_forced_differences", []):
        print(f"warning (forced): {line}")
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("merge", help="merge shard run folders (--shard k/N) into one run folder")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="shard folders of the same run")
    p.add_argument("--out", required=True, type=out_folder, help="new folder for the merged run")
    p.add_argument("--force", action="store_true", help="merge even if the manifests differ or shards are missing")
    p.add_argument("--partial", action="store_true",
                   help="merge shards that are unfinished (records missing) or still running; the merged run says so")
    p.set_defaults(func=merge_command)
