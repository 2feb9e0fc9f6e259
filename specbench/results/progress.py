"""How far a run folder got: the records present of those its manifest plans, and whether a process still runs
it (holds its lock). ``report`` says "partial" from it and ``merge`` refuses an unfinished shard with it.

The plan is the manifest's own (``validation.expected_keys``: methods x questions x turns x repeats x batch
sizes), so a run killed part-way, whose manifest was written before its first record, shows what it lacks.
The lock is the ``flock`` a writing run holds on ``.specbench.lock`` (``specbench.run.lock``); the kernel drops
it when its process dies, so a lock file left by a killed run does not count as running.

>>> Progress(present=5, planned=8, running=None).text()
'5 of 8 planned records'
>>> Progress(present=8, planned=8, running="pid 7 on gpu1").text()
'8 of 8 planned records; still running (pid 7 on gpu1 holds its lock)'
"""
from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.results.record import Record
from specbench.results.run_folder import LOCK_FILE
from specbench.results.validation import expected_keys


@dataclass(frozen=True)
class Progress:
    """Records present of those planned, and who holds the run's lock (None: no process runs it)."""

    present: int
    planned: int
    running: str | None

    @property
    def partial(self) -> bool:
        """Records are missing, or a process may still write more."""
        return self.present < self.planned or self.running is not None

    def text(self) -> str:
        running = f"; still running ({self.running} holds its lock)" if self.running else ""
        return f"{self.present} of {self.planned} planned records{running}"


def lock_holder(run_dir: str | Path) -> str | None:
    """Who holds ``run_dir``'s lock ("pid 123 on host"), or None when no live process does.

    Probed with a shared, non-blocking ``flock`` released at once: it fails only while a writer holds its
    exclusive one. (A run starting in that instant is told the folder is in use; it can simply be re-run.)"""
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # no lock file (or one no run would take): nobody writes the run
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _owner_text(path)
    finally:
        os.close(fd)
    return None


def _owner_text(path: Path) -> str:
    try:
        owner = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        owner = None
    if not isinstance(owner, dict):
        return "another process"
    return f"pid {owner.get('pid')} on {owner.get('host')}"


def run_progress(run_dir: str | Path, manifest: dict[str, Any], records: list[Record]) -> Progress | None:
    """The ``Progress`` of a run folder with ``records`` (all of its batch sizes), or None when its manifest
    plans nothing countable (imported answers; manifests from before the planned questions were recorded)."""
    if manifest.get("imported") or not manifest.get("questions"):
        return None
    planned = set(expected_keys(manifest, records))
    present = sum(r.key in planned for r in records)
    return Progress(present, len(planned), lock_holder(run_dir))


def progress_of(run: Any) -> Progress | None:
    """``run_progress`` of a loaded ``results.loaded_run.Run`` (every batch size of it)."""
    return run_progress(run.path, run.manifest, run.every or run.records)
