"""``specbench compare RUN_A RUN_B [...] [--plot FILE.png] [--onto PROFILE ...]``: side-by-side speedups of the
same methods on different machines, dtypes or models; runs that differ in model or dtype also get per-model /
per-dtype views; ``--onto`` adds each run's speedups projected onto those machines (one run is enough)."""
from __future__ import annotations

import argparse
from pathlib import Path

from specbench.config.argtypes import out_file, positive_int
from specbench.config.onto_flags import add_onto_arguments
from specbench.errors import UserError, writing


def compare_command(args: argparse.Namespace) -> int:
    from specbench.files.jsonfile import check_no_folder_in_the_way, write_text_atomic
    from specbench.interop.published import load_published, published_table, published_vs_published, run_vs_published
    from specbench.reports.compare import NotComparable, compare_runs, speedup_plot
    from specbench.reports.leaderboard.markdown import projected_md, table_md
    from specbench.reports.projection_columns import load_request, project_runs
    from specbench.reports.projection_files import projection_paths, write_projection_files, write_projection_plot
    from specbench.reports.table import html_text
    from specbench.reports.timing_sections import FLAGS_TITLE, IMPLAUSIBLE_TITLE, flag_lines, implausible_lines
    from specbench.results.loaded_run import load_run
    from specbench.results.spec_bench_speedup import spec_bench_speedups
    from specbench.results.stats import run_stats

    refs = [load_published(name) for name in args.reference or []]
    alone = (refs and not args.run_dirs) or (args.onto and len(args.run_dirs) == 1)  # (one run, N machines)
    if len(args.run_dirs) + len(refs) < 2 and not alone:
        raise UserError("compare needs two runs, or a run and --reference spec-bench:<table> or --onto PROFILE, "
                        "or references alone")
    if args.onto and not args.run_dirs:
        raise UserError("--onto needs a run to project")
    request = load_request(args.onto, args.here)  # (before any run loads: a bad profile fails fast)
    runs = [load_run(d) for d in args.run_dirs]
    projections = project_runs(runs, request)
    stats = [run_stats(r, args.bootstrap, 0) for r in runs]
    tables, diffs = [], []
    if len(runs) >= 2:
        try:
            tables, diffs = compare_runs(runs, force=args.force, stats=stats)
        except NotComparable as e:
            raise UserError(str(e)) from None
    tables += [run_vs_published(s, ref, r.name, spec_bench_speedups(r, ref.subtasks()))  # its definition too
               for r, s in zip(runs, stats) for ref in refs]
    if not runs:  # published tables alone: the first against each other one (3090 vs A100), or one as published
        tables += [published_vs_published(refs[0], b) for b in refs[1:]] or [published_table(refs[0])]
    parts = []
    if diffs:
        parts.append("**Warning: compared despite differences (--force):**\n\n" + "\n".join(f"- {html_text(d)}" for d in diffs))
    parts += [f"**{html_text(t.title)}**\n\n{table_md(t)}" for t in tables]  # (titles name the runs)
    parts += [projected_md(p) for p in projections]
    by_run = {r.name: st for r, st in zip(runs, stats)}
    for title, found in ((IMPLAUSIBLE_TITLE, implausible_lines(by_run)), (FLAGS_TITLE, flag_lines(by_run))):
        if found:
            parts.append(f"**{html_text(title)}:**\n\n" + "\n".join(f"- {html_text(line)}" for line in found))
    text = "\n\n".join(parts) + "\n"
    print(text)
    if args.out:
        out = Path(args.out)  # (not a folder, nor under a file: its argparse type)
        check_no_folder_in_the_way(out.parent, [p.name for p in projection_paths(out)] if projections else [])
        with writing(out.parent):
            out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out, text)
        print(f"wrote {args.out}")
        if projections:
            print(f"wrote {' and '.join(map(str, write_projection_files(Path(args.out), projections)))}")
    if args.plot and runs:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        speedup_plot(runs, stats).savefig(args.plot, dpi=100, bbox_inches="tight")
        print(f"wrote {args.plot}")
    if args.plot and projections:
        print(f"wrote {write_projection_plot(Path(args.plot), projections)}")
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("compare", help="compare runs of the same methods/tasks across machines, dtypes or models")
    p.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="results/<run> folders (two or more; A is the "
                   "reference), or one with --reference, or none with --reference")
    p.add_argument("--reference", action="append", metavar="spec-bench:TABLE",
                   help="a published table to put beside the run(s): spec-bench:rtx3090-vicuna-7b, "
                        "spec-bench:a100-vicuna-7b, spec-bench:a100-vicuna-13b, spec-bench:a100-vicuna-33b "
                        "(repeatable; two with no run compare the published tables, e.g. 3090 vs A100)")
    p.add_argument("--force", action="store_true", help="compare even if questions, max_new_tokens, backend or method configs differ")
    p.add_argument("--out", type=out_file, help="also write the tables to this markdown file")
    p.add_argument("--plot", help="also write a PNG: Overall speedup per method, one bar per run (labelled by model / dtype)")
    add_onto_arguments(p, "FILE's .projection.json/.csv with --out, FILE's -projected.png with --plot")
    p.add_argument("--bootstrap", type=positive_int, default=1000, help="bootstrap resamples for the 95%% CI")
    p.set_defaults(func=compare_command)
