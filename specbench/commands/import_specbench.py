"""``specbench import-specbench DIR --out RUN_DIR``: Spec-Bench model answers -> a run folder (marked imported).

See ``specbench/interop/spec_bench_import.py`` for what is kept; the run then works with ``report``,
``leaderboard`` and ``compare`` (a native run and an imported one differ in backend, so ``compare``
names that difference and needs ``--force``).
"""
from __future__ import annotations

import argparse

from specbench.config.argtypes import out_folder, positive_int


def import_command(args: argparse.Namespace) -> int:
    from specbench.interop.spec_bench_import import import_answers
    from specbench.reports.report import write_report

    manifest = import_answers(args.answer_dir, args.out, baseline=args.baseline, hardware=args.hardware,
                              model=args.model, max_new_tokens=args.max_new_tokens)
    files = manifest["imported"]["files"]
    print("\n".join(f"{m}: {f['file']}" for m, f in files.items()))
    print(write_report(args.out))
    print(f"[specbench] imported {len(files)} answer files into {args.out}/ ({manifest['imported']['note']})")
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("import-specbench", help="turn Spec-Bench model answer files into a run folder",
                        description="Turn Spec-Bench's model_answer/*.jsonl (baseline + methods) into a run folder.")
    p.add_argument("answer_dir", help="folder of Spec-Bench answer files, e.g. data/spec_bench/model_answer")
    p.add_argument("--out", required=True, type=out_folder, help="new run folder to write")
    p.add_argument("--baseline", help="the baseline's file name (default: the 'vanilla' file)")
    p.add_argument("--hardware", help="the GPU the answers were timed on (Spec-Bench does not record it)")
    p.add_argument("--model", help="model name (default: the part all model ids share)")
    p.add_argument("--max-new-tokens", type=positive_int, help="the run's token limit (Spec-Bench's default: 1024)")
    p.set_defaults(func=import_command)
