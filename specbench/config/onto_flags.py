"""``--onto PROFILE`` (repeatable) and ``--here PROFILE``: the flags of ``compare`` and ``leaderboard`` that add a
run's speedups projected onto other machines' device profiles (docs/projection.md).

>>> p = argparse.ArgumentParser()
>>> add_onto_arguments(p, "a figure")
>>> p.parse_args(["--onto", "a.json", "--onto", "b.json"]).onto
['a.json', 'b.json']
"""
from __future__ import annotations

import argparse


def add_onto_arguments(parser: argparse.ArgumentParser, writes: str) -> None:
    """Add ``--onto`` and ``--here``; ``writes`` says what else ``--onto`` makes the command write."""
    parser.add_argument("--onto", action="append", metavar="PROFILE",
                        help="a device profile (specbench profile's device-profile-*.json) to project each run onto: "
                             "a table per run, measured column first, one projected column per profile, every "
                             f"projected cell naming its profile; also {writes} (repeatable)")
    parser.add_argument("--here", metavar="PROFILE", help="with --onto: a device profile of the machine the runs ran "
                        "on (needed for runs that recorded no host figure, and for drafters that run the target)")
