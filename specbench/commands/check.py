"""``specbench check RUN_DIR``: lossless regression check of a run (exit 1 on any MISMATCH record), and its timing
check (exit 1 on an implausible speedup or a stalled generation); exit 1 on a forced merge of different models or
backends unless ``--allow-forced-merge``; exit 2 on a damaged or inconsistent record.

What is checked and how: ``specbench.results.check``.
"""
from __future__ import annotations

import argparse

from specbench.results.check import check_run


def check_command(args: argparse.Namespace) -> int:
    from specbench.reports.table import visible_lines

    code, lines = check_run(args.run_dir, strict=args.strict, decode=not args.ids, partial=args.partial,
                            allow_forced_merge=args.allow_forced_merge)
    print(visible_lines("\n".join(lines)))  # (question ids and decoded tokens: a bidi control would reorder the line)
    return code


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("check", help="lossless and timing check of a run (exit 1 on any mismatch, "
                       "implausible speedup or stalled generation)")
    p.add_argument("run_dir", help="a results/<run> folder")
    p.add_argument("--strict", action="store_true", help="also fail on ties (near-equal AR top-2 logits); at temperature > 0, fail on a distributional flag")
    p.add_argument("--ids", action="store_true", help="show token ids only (do not load the tokenizer)")
    p.add_argument("--partial", action="store_true", help="check the records there even when some the run's plan "
                   "expects are missing (an interrupted run); without it, missing records fail the check")
    p.add_argument("--allow-forced-merge", action="store_true", help="accept a run merged with merge --force from "
                   "shards of different models or backends (without it such a run fails; its figures stay marked)")
    p.set_defaults(func=check_command)
