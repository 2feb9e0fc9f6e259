"""Checks of every value ``specbench launch --slurm`` writes into an sbatch script, so none can add a line.

A ``#SBATCH --partition=...`` value is written as is (Slurm reads it, bash sees a comment), so a newline in it
would start a command of its own that the array task runs, and a ``;`` or ``$(...)`` would reach Slurm's own
parser. The Slurm values are therefore held to the formats Slurm documents (``sbatch --time``: minutes,
minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes, days-hours:minutes:seconds; partition
and account names: letters, digits, ``_``, ``-``, ``.``; several partitions joined by commas). Paths and run
arguments are shell-quoted in the script, which keeps metacharacters inert, but a quoted newline would still
break the comment lines that name them: control characters are refused everywhere.

>>> slurm_time("2-12:30"), slurm_names("--partition", "gpu,debug")
('2-12:30', 'gpu,debug')
>>> slurm_time("1:00\\ntouch x")
Traceback (most recent call last):
specbench.errors.ConfigError: --time '1:00\\ntouch x' is not a Slurm time limit (minutes, minutes:seconds, \
hours:minutes:seconds, days-hours, days-hours:minutes or days-hours:minutes:seconds)
>>> whole_count("--gpus-per-shard", 2.0, 0)
2
"""
from __future__ import annotations

import math
import re
import unicodedata
from typing import Iterable

from specbench.errors import ConfigError

# [0-9] rather than \d: Slurm reads ASCII digits only, and \d would let other scripts' digits through
TIME = re.compile(r"[0-9]+-[0-9]+(:[0-9]+){0,2}|[0-9]+(:[0-9]+){0,2}")
NO_LIMIT = ("UNLIMITED", "INFINITE")  # Slurm's words for "no time limit"
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
TIME_FORMATS = ("minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes or "
                "days-hours:minutes:seconds")


def slurm_time(value: str) -> str:
    """``value`` when it is a time limit ``sbatch --time`` accepts, else a one-line ``ConfigError``."""
    if TIME.fullmatch(value) or value.upper() in NO_LIMIT:
        return value
    raise ConfigError(f"--time {value!r} is not a Slurm time limit ({TIME_FORMATS})")


def slurm_names(flag: str, value: str) -> str:
    """``value`` when it is one Slurm name or several joined by commas (``--partition gpu,debug``)."""
    if all(NAME.fullmatch(name) for name in value.split(",")):
        return value
    raise ConfigError(f"{flag} {value!r} is not a Slurm name (letters, digits, '_', '-' and '.'; "
                      "several joined by commas)")


def whole_count(flag: str, value: float, minimum: int) -> int:
    """``value`` (an argparse float) as the whole number ``#SBATCH`` needs, at least ``minimum``.

    >>> whole_count("--cpus-per-shard", 0.5, 1)
    Traceback (most recent call last):
    specbench.errors.ConfigError: --cpus-per-shard must be a whole number >= 1 for Slurm, got 0.5
    """
    if not (math.isfinite(value) and value == int(value) and value >= minimum):
        raise ConfigError(f"{flag} must be a whole number >= {minimum} for Slurm, got {value}")
    return int(value)


def check_script_words(named: Iterable[tuple[str, str]]) -> None:
    """Each (what, word) written into a script holds no control character (newline, carriage return, ...).

    >>> check_script_words([("--out", "results/full"), ("--out", "results/x\\ny")])
    Traceback (most recent call last):
    specbench.errors.ConfigError: --out 'results/x\\ny' contains a control character, which an sbatch script cannot hold
    """
    for what, word in named:
        if any(unicodedata.category(c) == "Cc" for c in word):
            raise ConfigError(f"{what} {word!r} contains a control character, which an sbatch script cannot hold")
