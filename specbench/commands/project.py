"""``specbench project RUN --onto PROFILE [--onto PROFILE2 ...] [--here PROFILE] [--format md|json|csv]``: the
run's speedups as they would read on each profile's machine, beside the measured ones (docs/projection.md).

Writes ``projection.md``, ``projection.json`` and ``projection.csv`` into ``--out`` (default: the run folder)
and prints the chosen format; every projected figure is labelled "projected" with the profile it used.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from specbench.config.argtypes import out_folder

FORMATS = ("md", "json", "csv")
OUTPUTS = ("projection.md", "projection.json", "projection.csv")


def project_command(args: argparse.Namespace) -> int:
    from specbench.errors import writing
    from specbench.files.jsonfile import check_no_folder_in_the_way, write_json_atomic, write_text_atomic
    from specbench.profiling.device_profile import load_device_profile
    from specbench.reports.projection_costs import machine_costs
    from specbench.reports.projection_output import projection_csv, projection_json, projection_text
    from specbench.reports.projection_table import build_projection, onto_profile
    from specbench.results.loaded_run import load_run

    run = load_run(args.run_dir, every_batch=True)
    onto = [onto_profile(p, load_device_profile(p)) for p in args.onto]
    here = machine_costs(load_device_profile(args.here)) if args.here else None
    proj = build_projection(run, onto, here)
    out = Path(args.out) if args.out else run.path
    check_no_folder_in_the_way(out, OUTPUTS)  # (--out itself was checked by its argparse type)
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
    text, data, table = projection_text(proj), projection_json(proj), projection_csv(proj)
    write_text_atomic(out / "projection.md", text)
    write_json_atomic(out / "projection.json", data, indent=1)
    write_text_atomic(out / "projection.csv", table)
    print({"md": text, "json": json.dumps(data, indent=1) + "\n", "csv": table}[args.format], end="")
    return 0


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("project", help="a run's speedups projected onto other machines' device profiles "
                        "(its per-step records priced with their costs), beside the measured ones")
    p.add_argument("run_dir", help="a results/<run> folder")
    p.add_argument("--onto", action="append", required=True, metavar="PROFILE",
                   help="a device profile (specbench profile's device-profile.json) of the machine to project onto "
                        "(repeatable: one projected column each)")
    p.add_argument("--here", metavar="PROFILE", help="a device profile of the machine the run ran on (needed for runs "
                   "that recorded no host figure, and for drafters that run the target itself)")
    p.add_argument("--format", choices=FORMATS, default="md", help="what to print (all three are written)")
    p.add_argument("--out", type=out_folder, help="folder for projection.md/json/csv (default: the run folder)")
    p.set_defaults(func=project_command)
