"""The shards of one ``specbench run`` command: their command lines, folders, and the final merge.

Shard ``k`` of ``N`` is the user's run command plus ``--shard k/N --out-dir SHARDS --run-name shardKofN``,
so its folder is fixed and a re-run of the same command resumes it (finished records are kept).

>>> ShardSet(["--methods", "pld"], 2, Path("/r/x_shards")).command(1, ["python"])[-7:]
['--shard', '1/2', '--out-dir', '/r/x_shards', '--run-name', 'shard1of2', '--no-progress']
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from specbench.errors import ConfigError
from specbench.files.safe_names import inside
from specbench.results.run_folder import MANIFEST_FILE, RECORDS_FILE

RESERVED = ("--shard", "--out-dir", "--run-name")  # the launcher sets these for every shard

# exit codes of ``specbench run``: 0 done, 1 done with MISMATCH records, 2 bad input (a retry cannot help)
DONE_CODES = (0, 1)
USER_ERROR = 2


def check_run_args(run_args: Sequence[str]) -> None:
    """The run flags must leave sharding and output placement to the launcher."""
    for arg in run_args:
        if arg.split("=", 1)[0] in RESERVED:
            raise ConfigError(f"launch sets {arg.split('=', 1)[0]} itself; remove it from the run arguments")


def default_shards_dir(out: Path) -> Path:
    """Where the shard folders of the merged run ``out`` live: ``<out>_shards`` beside it."""
    return out.parent / f"{out.name}_shards"


def holds_run(path: Path) -> bool:
    return (path / MANIFEST_FILE).exists() or (path / RECORDS_FILE).exists()


@dataclass(frozen=True)
class ShardSet:
    """``n`` shards of the run ``run_args`` with their folders under ``shards_dir``."""

    run_args: tuple[str, ...] | list[str]
    n: int
    shards_dir: Path

    def name(self, k: int) -> str:
        return f"shard{k}of{self.n}"

    def folder(self, k: int) -> Path:
        return inside(self.shards_dir, self.name(k), "shard name")

    def command(self, k: int, python: Sequence[str] = (sys.executable,)) -> list[str]:
        """The command line of shard ``k`` (1-based) run by ``python``."""
        return [*python, "-m", "specbench", "run", *self.run_args, "--shard", f"{k}/{self.n}",
                "--out-dir", str(self.shards_dir), "--run-name", self.name(k), "--no-progress"]

    def merge(self, out: Path) -> dict:
        """Merge the finished shard folders into ``out`` (``specbench merge``'s checks apply)."""
        from specbench.results.merge import merge_runs

        return merge_runs([self.folder(k) for k in range(1, self.n + 1)], out)
