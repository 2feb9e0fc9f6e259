"""Shards of one run as Ray tasks: one GPU each where the cluster has GPUs, failed shards retried (resumed).

Each task runs its shard's ``specbench run`` as a subprocess (``shards.ShardSet.command``), so it gets a
process of its own with the ``CUDA_VISIBLE_DEVICES`` Ray assigned. A shard that ends with exit 0 or 1
(1: finished with MISMATCH records) is done; exit 2 is bad input and is not retried; any other end (a
crash, a killed worker, a lost node) is retried up to ``retries`` times, and each retry resumes the
shard's folder, keeping the records already written. Ray moves only the command line and the exit code
between processes; every result stays in the shard folders (JSON lines).

Needs the optional extra: ``pip install 'specbench[ray]'``. Without ``address`` a local Ray instance is
started (``ray.init``); with ``address="auto"`` or ``ray://host:10001`` the existing cluster is used, whose
nodes must have specbench installed and see the shard folder (a shared file system).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from specbench.errors import UserError
from specbench.launch.shards import DONE_CODES, USER_ERROR, ShardSet

TAIL_CHARS = 2000  # of a failed shard's output, shown in the launch's error


@dataclass
class ShardOutcome:
    """How shard ``k`` ended: its last exit code, attempts made, and the tail of its last output."""

    k: int
    code: int | None = None
    attempts: int = 0
    tail: str = ""
    history: list[int] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.code in DONE_CODES


def shard_resources(cluster: dict[str, float], gpus_per_shard: float, cpus_per_shard: float) -> dict[str, float]:
    """Ray resources of one shard task: ``gpus_per_shard`` GPUs when the cluster has GPUs, else CPUs only.

    >>> shard_resources({"CPU": 16.0, "GPU": 8.0}, 1, 2)
    {'num_cpus': 2, 'num_gpus': 1}
    >>> shard_resources({"CPU": 2.0}, 1, 1)
    {'num_cpus': 1}
    """
    out: dict[str, float] = {"num_cpus": cpus_per_shard}
    if cluster.get("GPU", 0) > 0 and gpus_per_shard > 0:
        out["num_gpus"] = gpus_per_shard
    return out


def run_shard_process(command: list[str], env: dict[str, str]) -> tuple[int, str]:
    """(exit code, last output) of one shard's command; runs inside a Ray worker."""
    import subprocess

    proc = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True)
    return proc.returncode, (proc.stdout + proc.stderr)[-TAIL_CHARS:]


def _pythonpath() -> str:
    """This checkout first on the workers' path, so shards import the same specbench as the driver."""
    root = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH")
    return root + (os.pathsep + rest if rest else "")


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("launch --ray needs Ray: pip install 'specbench[ray]' (or pip install ray)") from None
    return ray


def run_on_ray(shards: ShardSet, python: Sequence[str] = (sys.executable,), retries: int = 2,
               address: str | None = None, gpus_per_shard: float = 1, cpus_per_shard: float = 1,
               log: Callable[[str], None] = print) -> list[ShardOutcome]:
    """Run every shard to completion (or until its retries are spent); returns one outcome per shard."""
    ray = import_ray()
    env = {"PYTHONPATH": _pythonpath()}
    started_here = not ray.is_initialized()
    if started_here:
        # Ray runs its workers, and so the shards they start, at niceness 15: any other process on the machine
        # then starves them (a shard of seconds took 6 minutes beside one busy process) and skews their
        # timings. A local instance started here runs them at the driver's priority instead.
        os.environ.setdefault("RAY_worker_niceness", "0")
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": env}, configure_logging=False)
    try:
        resources = shard_resources(ray.cluster_resources(), gpus_per_shard, cpus_per_shard)
        task = ray.remote(max_retries=0)(run_shard_process).options(**resources)
        log(f"[launch] {shards.n} shards as Ray tasks, each with {resources}; shard folders in {shards.shards_dir}")
        outcomes = {k: ShardOutcome(k) for k in range(1, shards.n + 1)}
        pending = {task.remote(shards.command(k, python), env): k for k in outcomes}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            k = pending.pop(ready[0])
            o = outcomes[k]
            o.attempts += 1
            try:
                o.code, o.tail = ray.get(ready[0])
            except ray.exceptions.RayError as e:  # the worker or its node died: the shard may be resumed
                o.code, o.tail = -1, f"{type(e).__name__}: {str(e)[:TAIL_CHARS]}"
            o.history.append(o.code)
            if o.done:
                log(f"[launch] shard {k}/{shards.n} done (exit {o.code}, attempt {o.attempts})")
            elif o.code != USER_ERROR and o.attempts <= retries:
                log(f"[launch] shard {k}/{shards.n} failed (exit {o.code}); resuming it, retry {o.attempts}/{retries}")
                pending[task.remote(shards.command(k, python), env)] = k
            else:
                log(f"[launch] shard {k}/{shards.n} failed (exit {o.code}) after {o.attempts} attempt(s)")
        return [outcomes[k] for k in sorted(outcomes)]
    finally:
        if started_here:
            ray.shutdown()
