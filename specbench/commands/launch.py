"""``specbench launch --ray|--slurm --shards N --out RUN_DIR -- RUN_ARGS...``: one run split over machines.

``--ray`` runs the N shards (``specbench run RUN_ARGS --shard k/N``) as Ray tasks, one GPU each where the
cluster has GPUs, retries (resumes) failed shards and merges them into RUN_DIR. ``--slurm`` writes
``RUN_DIR.sbatch`` (an array of N tasks) and ``RUN_DIR.merge.sbatch`` to submit after it. Shard folders
live in ``RUN_DIR_shards/shardKofN``; the same command again resumes them.

    specbench launch --ray --shards 8 --out results/full -- --methods pld,rest --tasks all --device cuda
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.config.argtypes import non_negative_int, out_folder, positive_int
from specbench.errors import UserError

if TYPE_CHECKING:
    from specbench.launch.slurm import SlurmOptions


def _validated(args: argparse.Namespace) -> tuple[list[str], Path]:
    """The run arguments (checked by building the run's plan now) and the merged run's folder."""
    from specbench.config.run_flags import add_run_arguments, config_from_args
    from specbench.launch.shards import check_run_args, holds_run
    from specbench.run.plan import make_plan

    run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else list(args.run_args)
    check_run_args(run_args)
    parser = argparse.ArgumentParser(prog="specbench launch ... --", add_help=False, exit_on_error=False)
    add_run_arguments(parser)
    try:
        parsed, unknown = parser.parse_known_args(run_args)
    except argparse.ArgumentError as e:
        raise UserError(f"run arguments: {e}") from None
    if unknown:
        raise UserError(f"run arguments not understood: {' '.join(unknown)}")
    make_plan(config_from_args(parsed), (1, args.shards))  # bad names, options or files fail here, once
    out = Path(args.out)
    if holds_run(out):
        raise UserError(f"{out} already holds a run; pick another --out (its shard folders resume on their own)")
    return run_args, out


def _slurm_options(args: argparse.Namespace) -> "SlurmOptions":
    """The ``#SBATCH`` values of the flags, each checked (``launch.slurm_values``: one-line ``ConfigError``)."""
    from specbench.launch.slurm import SlurmOptions
    from specbench.launch.slurm_values import whole_count

    return SlurmOptions(gpus_per_shard=whole_count("--gpus-per-shard", args.gpus_per_shard, 0),
                        cpus_per_shard=whole_count("--cpus-per-shard", args.cpus_per_shard or 8, 1),
                        partition=args.partition, time=args.time, account=args.account)


def launch_command(args: argparse.Namespace) -> int:
    from specbench.launch.shards import ShardSet, default_shards_dir

    if args.shards < 2:
        raise UserError("--shards must be at least 2 (one shard is a plain `specbench run`)")
    opts = _slurm_options(args) if args.slurm else None  # (its values are checked before the run's, cheaply)
    run_args, out = _validated(args)
    shards = ShardSet(tuple(run_args), args.shards, Path(args.shards_dir) if args.shards_dir else default_shards_dir(out))
    python = shlex.split(args.python) if args.python else [sys.executable]
    if opts is not None:
        from specbench.launch.slurm import write_scripts

        array, merge = write_scripts(shards, out, python, opts)
        print(f"wrote {array} and {merge}; submit with:\n"
              f"  jid=$(sbatch --parsable {shlex.quote(str(array))}) && sbatch --dependency=afterok:$jid {shlex.quote(str(merge))}")
        return 0
    from specbench.launch.ray_launcher import run_on_ray

    outcomes = run_on_ray(shards, python, args.retries, args.address, args.gpus_per_shard, args.cpus_per_shard or 1,
                          log=lambda line: print(line, file=sys.stderr))
    failed = [o for o in outcomes if not o.done]
    if failed:
        o = failed[0]
        last = o.tail.strip().splitlines()[-1] if o.tail.strip() else "no output"
        raise UserError(f"shard(s) {', '.join(str(f.k) for f in failed)} of {shards.n} failed (shard {o.k}: exit "
                        f"{o.code}, {last}); re-run the same command to resume them")
    merged = shards.merge(out)
    from specbench.reports.report import write_report

    print(write_report(out))
    print(f"[launch] merged {shards.n} shards ({sum(map(len, merged['questions'].values()))} questions) into {out}",
          file=sys.stderr)
    return 1 if any(o.code == 1 for o in outcomes) else 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("launch", help="run the shards of one run on Ray (and merge) or write Slurm array scripts",
                        description="Split one `specbench run` into --shards N shards on a cluster.")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--ray", action="store_true", help="run the shards as Ray tasks, then merge (needs the 'ray' extra)")
    how.add_argument("--slurm", action="store_true", help="write RUN_DIR.sbatch (array) and RUN_DIR.merge.sbatch")
    p.add_argument("--shards", type=positive_int, required=True, help="number of shards N (>= 2)")
    p.add_argument("--out", required=True, type=out_folder, help="folder of the merged run")
    p.add_argument("--shards-dir", help="parent folder of the shard folders (default RUN_DIR_shards)")
    p.add_argument("--python", help="command that runs Python on the workers (default: this interpreter)")
    p.add_argument("--retries", type=non_negative_int, default=2, help="Ray: re-runs (resumes) of a failed shard (default 2)")
    p.add_argument("--address", help="Ray: cluster address ('auto', ray://host:10001); default: a local Ray instance")
    p.add_argument("--gpus-per-shard", type=float, default=1, help="GPUs per shard where there are GPUs (default 1)")
    p.add_argument("--cpus-per-shard", type=float, help="CPUs per shard (default: Ray 1, Slurm 8)")
    p.add_argument("--partition", help="Slurm partition (several: comma-separated)")
    p.add_argument("--time", help="Slurm time limit per shard: minutes, [days-]hours:minutes:seconds, ..., e.g. 04:00:00")
    p.add_argument("--account", help="Slurm account")
    p.add_argument("run_args", nargs=argparse.REMAINDER, help="-- then the arguments of `specbench run`")
    p.set_defaults(func=launch_command)
