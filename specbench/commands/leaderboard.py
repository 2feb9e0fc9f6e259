"""``specbench leaderboard RUN_DIR [RUN_DIR ...] --out DIR [--onto PROFILE ...]``: leaderboard.md + self-contained
leaderboard.html (with ``--onto``: each run's speedups projected onto those machines, docs/projection.md)."""
from __future__ import annotations

import argparse

from specbench.config.argtypes import out_folder, positive_int
from specbench.config.onto_flags import add_onto_arguments
from specbench.results.stats import DEFAULT_BOOTSTRAP, DEFAULT_SEED


def leaderboard_command(args: argparse.Namespace) -> int:
    from specbench.interop.published import load_published, published_table
    from specbench.profiling.profile import load_profile
    from specbench.reports.leaderboard.build import build_leaderboard
    from specbench.reports.projection_columns import load_request

    profile = load_profile(args.profile) if args.profile else None
    published = [published_table(load_published(name)) for name in args.reference or []]  # before any run loads
    request = load_request(args.onto, args.here)  # (before any run loads: a bad profile fails fast)
    paths = build_leaderboard(args.run_dirs, args.out, profile, args.bootstrap, args.seed, plots=not args.no_plots,
                              published=published, projection=request)
    print(paths["text"])
    if not paths["failed"]:
        print(f"wrote {paths['markdown']} and {paths['html']}")
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("leaderboard", help="render a Spec-Bench style leaderboard (markdown + HTML) from runs")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="results/<run> folders")
    p.add_argument("--out", required=True, type=out_folder, help="output directory for leaderboard.md and leaderboard.html")
    p.add_argument("--profile", help="a profile.json from `specbench profile` (adds predicted speedups)")
    p.add_argument("--bootstrap", type=positive_int, default=DEFAULT_BOOTSTRAP, help="bootstrap resamples for the 95%% CI")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (results are deterministic)")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib figures")
    p.add_argument("--reference", action="append", metavar="spec-bench:TABLE",
                   help="add a published Spec-Bench table (marked published, never pooled with the runs), e.g. "
                        "spec-bench:a100-vicuna-7b (repeatable)")
    add_onto_arguments(p, "a figure, and projection.json / projection.csv in --out")
    p.set_defaults(func=leaderboard_command)
