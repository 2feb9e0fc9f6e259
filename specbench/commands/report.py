"""``specbench report RUN_DIR [--format md|json|csv]``: render a run's tables from its records (writes
report.md, summary.json and summary.csv) and print the chosen format."""
from __future__ import annotations

import argparse
from pathlib import Path

from specbench.reports.report import FORMATS, write_report


def report_command(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run folder not found: {run_dir}")
    print(write_report(run_dir, args.format), end="" if args.format != "md" else "\n")
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("report", help="render a run's tables (speedup, tau, tokens/s, latency, acceptance, lossless) and summary files")
    p.add_argument("run_dir", help="a results/<run> folder")
    p.add_argument("--format", choices=FORMATS, default="md",
                   help="what to print: md (the tables, default), json (summary.json) or csv (summary.csv)")
    p.set_defaults(func=report_command)
