"""``specbench sweep``: one method's options over a grid, on the dev split, as one normal run per point.

    specbench sweep --method rest --grid rest.c=8,16,32,64 --tasks humaneval --limit 3 --max-new-tokens 128

Every point's options (``--method-opt`` fixed ones plus the point's) are checked before the model loads;
the model loads once and each point runs AR + the method, interleaved like any run, into
``<out>/<sweep-name>/<point>/`` (e.g. ``c=16``; ``num_drafts=5+draft_len=5`` for two keys). Then
``sweep.json``, ``sweep.md`` and ``sweep.png`` go beside the point folders and the best point is printed
as a ``--method-opt`` line; a ``budget`` axis holding ``auto`` and fixed budgets (``pld.budget=1,4,default,auto``)
also gets auto's speedup as a fraction of the best fixed budget in hindsight (``results/budget_oracle.py``).
The same command again resumes: finished points are skipped record by record.
"""
from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path
from typing import Any

from specbench.catalog import BASELINE
from specbench.config.run_config import RunConfig
from specbench.config.run_flags import add_run_arguments, config_from_args, mismatch_exit_code
from specbench.errors import ConfigError
from specbench.files.jsonfile import save_json
from specbench.files.safe_names import NAME_RULE, is_safe_name
from specbench.engine.backends.registry import load_model_for
from specbench.plugins.registry import METHODS
from specbench.reports.report import write_report
from specbench.reports.sweep_report import sweep_markdown, sweep_table, write_sweep_plot
from specbench.results.budget_oracle import oracle_lines
from specbench.results.sweep import (SweepPoint, best_line, best_point, grid_points, parse_grid, point_result,
                                     sweep_summary)
from specbench.run.plan import Plan, make_plan, run_dir_for
from specbench.run.runner import Runner

SPLIT = "dev"
DEFAULT_OUT = "results/sweeps"
SET_BY_SWEEP = ("--methods", "--run-name", "--shard", "--budget")  # run flags the sweep sets itself
SWEEP_HELP = {"--out-dir": f"parent folder of sweep folders (default {DEFAULT_OUT})",
              "--split": "the sweep always runs on the dev split (calibration questions, disjoint from eval)"}


def _base_config(args: argparse.Namespace) -> RunConfig:
    if (args.split or SPLIT) != SPLIT:
        raise ConfigError(f"specbench sweep runs on the dev split only (its questions are disjoint from the eval "
                          f"split's); drop --split {args.split}")
    args.budget = None  # one method per point: sweep the budget as an option (--grid rest.budget=default,auto)
    config = config_from_args(args)
    others = sorted(set(config.method_options) - {args.method})
    if others:
        raise ConfigError(f"--method-opt given for method(s) other than --method {args.method}: {', '.join(others)}")
    return dataclasses.replace(config, methods=(args.method,), split=SPLIT, run_name=None,
                               out_dir=args.out_dir or DEFAULT_OUT)


def _plans(args: argparse.Namespace) -> tuple[dict[str, list[str]], dict[str, Any], list[tuple[SweepPoint, Plan]],
                                               Plan]:
    """(grid, fixed options, a validated plan per point, the plan without the swept options); all errors now."""
    METHODS.get(args.method)  # unknown names raise with a suggestion
    if args.method == BASELINE:
        raise ConfigError(f"--method {BASELINE} is the baseline; it has no options to sweep")
    config = _base_config(args)
    grid = parse_grid(args.grid, args.method)
    fixed = dict(config.method_options.get(args.method, {}))
    both = sorted(set(grid) & set(fixed))
    if both:
        raise ConfigError(f"{args.method}.{both[0]} is both swept (--grid) and fixed (--method-opt); keep one")
    plans = []
    for point in grid_points(grid):  # make_plan checks each point's options with method_config
        options = {args.method: {**fixed, **point.as_dict()}}
        plans.append((point, make_plan(dataclasses.replace(config, method_options=options))))
    base = dataclasses.replace(plans[0][1], config=dataclasses.replace(config, method_options={args.method: fixed}))
    return grid, fixed, plans, base


def sweep_dir(args: argparse.Namespace, grid: dict[str, list[str]], base: Plan) -> Path:
    """``<out>/<sweep-name>``; the default name is the method, swept keys and the base run's folder name
    (tasks, limit, tokens, dtype, split, digest), so adding grid values to a sweep keeps its folder."""
    if args.sweep_name:
        if not is_safe_name(args.sweep_name):
            raise ConfigError(f"--sweep-name must be a single folder name ({NAME_RULE}), got {args.sweep_name!r}")
        name = args.sweep_name
    else:
        rest = run_dir_for(base).name.split("_", 1)[1]  # without "ar-<method>"; ends with the settings' digest
        name = f"{args.method}_{'-'.join(grid)}_{rest}"
    return Path(base.config.out_dir) / name


def command_line(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The sweep's command rebuilt from its parsed flags (the same flags reproduce the same sweep)."""
    words = ["specbench", "sweep"]
    for action in parser._actions:  # argparse keeps its actions here; there is no public accessor
        value = getattr(args, action.dest, None)
        if not action.option_strings or action.dest == "help" or value is None or value is False:
            continue
        flag = action.option_strings[-1]
        if value is True:
            words.append(flag)
        else:
            for v in value if isinstance(value, list) else [value]:
                words += [flag, str(v)]
    return shlex.join(words)


def sweep_command(args: argparse.Namespace) -> int:
    grid, fixed, plans, base = _plans(args)
    out = sweep_dir(args, grid, base)
    cfg = base.config
    n_q = sum(len(q) for q in base.questions.values())
    print(f"[sweep] {out}: {args.method} over {len(plans)} point(s) of {', '.join(grid)}; {n_q} dev question(s) over "
          f"{len(base.tasks)} task(s); max_new_tokens {cfg.max_new_tokens}", file=sys.stderr)
    loaded = load_model_for(cfg.backend, cfg.model, cfg.dtype, cfg.device, cfg.threads)  # once, shared by every point's runner
    mismatches, results = 0, []
    for i, (point, plan) in enumerate(plans, 1):
        run_dir = out / point.folder
        print(f"[sweep] point {i}/{len(plans)} {point.label} -> {run_dir}", file=sys.stderr)
        mismatches += Runner(plan, run_dir, loaded=loaded, progress=not args.no_progress).execute()
        write_report(run_dir)
        results.append(point_result(point, run_dir, args.method))
    command = command_line(args.parser, args)
    best = best_point(results)
    settings = {"tasks": list(base.tasks), "limit": cfg.limit, "split": SPLIT, "max_new_tokens": cfg.max_new_tokens,
                "model": cfg.model, "dtype": cfg.dtype, "backend": cfg.backend, "temperature": cfg.temperature}
    save_json(sweep_summary(args.method, grid, fixed, results, command, settings), out / "sweep.json", indent=2)
    markdown = sweep_markdown(args.method, results, best, command, SPLIT)
    (out / "sweep.md").write_text(markdown, encoding="utf-8")
    write_sweep_plot(args.method, results, out / "sweep.png")
    print("\n".join(sweep_table(args.method, results) + oracle_lines(results)))
    print(f"[sweep] results: {out}/ (sweep.json, sweep.md, sweep.png, one run folder per point)", file=sys.stderr)
    print(best_line(args.method, best))
    return mismatch_exit_code(mismatches, cfg.allow_mismatch, "[sweep]", "the points' reports")


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("sweep", help="sweep one method's options over a grid on the dev split (a run per point)",
                        description="Run one method with each point of a grid of its options on each task's dev split "
                                    "(interleaved with AR, a run folder per point), then tabulate, plot and print the "
                                    "best point as a --method-opt line.")
    p.add_argument("--method", required=True, help="the method to sweep (one)")
    p.add_argument("--grid", action="append", metavar="METHOD.KEY=V1,V2,...", required=True,
                   help="an option and its values, e.g. rest.c=8,16,32,64 (repeatable: the cartesian product)")
    p.add_argument("--sweep-name", help="folder of the sweep under --out-dir (default: derived from the settings)")
    add_run_arguments(p, omit=SET_BY_SWEEP, helps=SWEEP_HELP)
    p.set_defaults(func=sweep_command, parser=p)
