"""``specbench export-specbench RUN_DIR [--out DIR]``: a run folder -> Spec-Bench model answer files."""
from __future__ import annotations

import argparse
from pathlib import Path

from specbench.config.argtypes import out_folder
from specbench.errors import UserError


def export_command(args: argparse.Namespace) -> int:
    from specbench.interop.spec_bench_export import export_answers, needs_tokenizer
    from specbench.results.check import load_run_tokenizer
    from specbench.results.loaded_run import load_run

    run = load_run(args.run_dir)
    tokenizer = None
    if needs_tokenizer(run):
        if args.tokenizer:
            tokenizer = load_run_tokenizer({"model": {"id": args.tokenizer}})
        else:
            tokenizer = load_run_tokenizer(run.manifest)
        if tokenizer is None:
            raise UserError(f"cannot load the tokenizer of {args.tokenizer or 'the run model'} offline to decode "
                            "the answers; pass --tokenizer with a local model folder")
    out = Path(args.out) if args.out else run.path / "spec_bench_answers"
    for path in export_answers(run.path, out, tokenizer):
        print(path)
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("export-specbench", help="write a run's answers as Spec-Bench model answer files",
                        description="Write one Spec-Bench model answer file (<model_id>.jsonl) per method of a run.")
    p.add_argument("run_dir", help="a results/<run> folder")
    p.add_argument("--out", type=out_folder, help="folder for the files (default RUN_DIR/spec_bench_answers)")
    p.add_argument("--tokenizer", help="model id or folder whose tokenizer decodes the answers (default: the run's)")
    p.set_defaults(func=export_command)
