"""``specbench run``: benchmark methods on tasks and print per-subtask tables (``run_bench.py`` is a shim)."""
from __future__ import annotations

import argparse
import sys

from specbench.config.run_flags import add_run_arguments, config_from_args, mismatch_exit_code
from specbench.reports.report import write_report
from specbench.run.plan import make_plan, parse_shard, run_dir_for
from specbench.run.runner import Runner


def run_command(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    plan = make_plan(config, parse_shard(args.shard))
    run_dir = run_dir_for(plan)
    n_q = sum(len(q) for q in plan.questions.values())
    split = "" if config.split == "eval" else f" ({config.split} split)"
    print(f"[specbench] {run_dir}: methods {','.join(plan.methods)}; {n_q} questions{split} over "
          f"{len(plan.tasks)} task(s); max_new_tokens {config.max_new_tokens}", file=sys.stderr)
    mismatches = Runner(plan, run_dir, progress=not args.no_progress).run()
    print(write_report(run_dir))
    print(f"[specbench] results: {run_dir}/ (records.jsonl, manifest.json, report.md, summary.json, summary.csv)", file=sys.stderr)
    return mismatch_exit_code(mismatches, config.allow_mismatch, "[specbench]", "the lossless table")


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("run", help="run the benchmark (records + manifest + report)",
                        description="Time methods against the autoregressive baseline on identical work.")
    add_run_arguments(p)
    p.set_defaults(func=run_command)
