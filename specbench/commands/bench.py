"""``specbench run``: benchmark methods on tasks and print per-subtask tables (``run_bench.py`` is a shim)."""
from __future__ import annotations

import argparse
import sys

from specbench.config.run_flags import add_run_arguments, config_from_args, mismatch_exit_code
from specbench.errors import WriteError
from specbench.reports.report import REPORT_FILE, report_files
from specbench.reports.summary import SUMMARY_CSV, SUMMARY_JSON
from specbench.run.plan import make_plan, parse_shard, run_dir_for
from specbench.run.machine_session import require_quiet
from specbench.run.runner import Runner

RESULT_FILES = ("records.jsonl", "manifest.json", REPORT_FILE, SUMMARY_JSON, SUMMARY_CSV)


def run_command(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    plan = make_plan(config, parse_shard(args.shard))
    run_dir = run_dir_for(plan)
    if args.require_quiet:  # before the model loads: a busy machine is refused in one line
        require_quiet(config.threads)
    n_q = sum(len(q) for q in plan.questions.values())
    split = "" if config.split == "eval" else f" ({config.split} split)"
    print(f"[specbench] {run_dir}: methods {','.join(plan.all_methods)}; {n_q} questions{split} over "
          f"{len(plan.tasks)} task(s); max_new_tokens {config.max_new_tokens}", file=sys.stderr)
    mismatches = Runner(plan, run_dir, progress=not args.no_progress, require_quiet=args.require_quiet).execute()
    report = report_files(run_dir)
    print(report.text)
    written = [f for f in RESULT_FILES if f not in report.not_written]  # (never a file a full disk refused)
    print(f"[specbench] results: {run_dir}/ ({', '.join(written)})", file=sys.stderr)
    if report.not_written:
        raise WriteError(f"could not write {', '.join(report.not_written)} in {run_dir} (the records are complete: "
                         f"`specbench report {run_dir}` writes the report files again once the folder can be written)")
    return mismatch_exit_code(mismatches, config.allow_mismatch, "[specbench]", "the lossless table")


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("run", help="run the benchmark (records + manifest + report)",
                        description="Time methods against the autoregressive baseline on identical work.")
    add_run_arguments(p)
    # (how to start, not what runs: outside the config, so its digest and run folder are the same either way)
    p.add_argument("--require-quiet", action="store_true",
                   help="refuse to start while other processes keep this run's cores busy (measured for 1.5 s "
                        "before the model loads), and stop (exit 2) at a stalled generation without writing it, so "
                        "running the command again times it again; without it a busy machine and a stall are "
                        "warnings and report lines")
    p.set_defaults(func=run_command)
