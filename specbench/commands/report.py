"""``specbench report RUN_DIR``: render per-subtask tables from a run's records (writes report.md)."""
from __future__ import annotations

import argparse
from pathlib import Path

from specbench.report import write_report


def report_command(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run folder not found: {run_dir}")
    print(write_report(run_dir))
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("report", help="render a run's tables (speedup, tau, tokens/s, lossless)")
    p.add_argument("run_dir", help="a results/<run> folder")
    p.set_defaults(func=report_command)
