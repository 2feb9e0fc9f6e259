"""The OpenMP wait policy specbench's commands start torch with.

torch's CPU threads wait for each other at the end of every parallel region. With ``OMP_WAIT_POLICY``
unset the OpenMP runtime lets them spin a while first (fast on a quiet machine, ruinous beside another
busy process: a spinning thread holds a core the other process needs, and a descheduled one stalls the
rest); ``PASSIVE`` makes them sleep at once. The runtime reads the variable once, when torch loads it, so
the CLI sets it before anything imports torch (``specbench.cli.main``); a user's own setting always wins.
``scripts/wait_policy_bench.py`` measures the policies quiet and beside a busy process.

>>> env = {}
>>> with_default_policy(env, "PASSIVE"), env
('PASSIVE', {'OMP_WAIT_POLICY': 'PASSIVE'})
>>> with_default_policy({"OMP_WAIT_POLICY": "ACTIVE"}, "PASSIVE"), with_default_policy({}, None)
('ACTIVE', None)
"""
from __future__ import annotations

import os
from typing import MutableMapping

VARIABLE = "OMP_WAIT_POLICY"
# The policy the CLI sets when the user set none: None leaves the OpenMP runtime's default (spin, then
# sleep). Chosen from scripts/wait_policy_bench.py's figures (docs/measurements.md, "OpenMP wait policy on a
# busy machine"): PASSIVE made a quiet run 36% slower (2.32 -> 3.16 s per generation) and a run beside a
# spinning process 2.3x faster (8.84 -> 3.78 s); benchmarks are taken on quiet machines, and a busy one is
# warned about instead.
DEFAULT_OMP_WAIT_POLICY: str | None = None


def with_default_policy(environ: MutableMapping[str, str], default: str | None) -> str | None:
    """Set ``OMP_WAIT_POLICY`` in ``environ`` to ``default`` unless it is set (None: leave it); returns the
    policy now in effect (None: the runtime's default)."""
    if default is not None:
        environ.setdefault(VARIABLE, default)
    return environ.get(VARIABLE)


def apply_default_wait_policy() -> str | None:
    """``DEFAULT_OMP_WAIT_POLICY`` into this process's environment unless the user set the variable."""
    return with_default_policy(os.environ, DEFAULT_OMP_WAIT_POLICY)


def wait_policy() -> str | None:
    """The policy this process's environment holds (None: unset, the runtime's default)."""
    return os.environ.get(VARIABLE)
