"""One invocation's record of the machine around a run, kept in the manifest's ``machine_state``.

Each invocation of a run (the first and every resume) is a session: ``sessions`` in
``manifest["machine_state"]`` gets one entry when the manifest is written, holding what was known as the
run started (``before``: the load average, and other processes' measured share where the load looked
busy), the cores, the run's threads, the OpenMP wait policy and the CPU governor; when the run ends
(finished, failed or interrupted) the entry gets ``during`` (other processes' CPU share, the load
average sampled every few seconds), ``after`` and ``completed``. A busy machine is a warning on stderr as
the run starts and as it ends, and a line in the report header (``specbench.profiling.machine_state``).
"""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import torch

from specbench.errors import UserError
from specbench.files.jsonfile import write_json_atomic
from specbench.profiling import machine_probe
from specbench.profiling.machine_sampler import LoadSampler, before_figures, measure_other_cores
from specbench.profiling.machine_state import (INFLATION, MACHINE_STATE, QUIET_CHECK_S, SAMPLE_INTERVAL_S, is_busy,
                                               load_says_busy, session_busy_text, sessions)
from specbench.profiling.wait_policy import wait_policy
from specbench.results.run_folder import MANIFEST_FILE, RunFileError, read_manifest


def _warn(text: str) -> None:
    print(f"warning: {text}; {INFLATION}", file=sys.stderr)


class MachineSession:
    """A context around one run invocation: measures the machine as it starts (warning if busy), samples it
    until it ends, then writes the figures into the session ``add_to`` put in the manifest (warning if busy).

    ``threads``: the run's ``--threads`` (None: torch's thread count). As the runner uses it::

        with MachineSession(run_dir, cfg.threads) as session:  # "warning: the machine is busy: ..." if so
            ...                                                 # load the model, build the manifest
            session.add_to(manifest, threads=2)                 # then write it; the run goes on
        # the manifest's session now has during / after / completed"""

    def __init__(self, run_dir: Path, threads: int | None, interval: float = SAMPLE_INTERVAL_S) -> None:
        self.run_dir, self.interval = run_dir, interval
        self.threads = threads or torch.get_num_threads()
        self.record: dict[str, Any] = {}
        self._sampler: LoadSampler | None = None
        self._in_manifest = False

    def __enter__(self) -> "MachineSession":
        probe = machine_probe.default_probe()  # (looked up here: tests replace it)
        self.probe = probe
        self.record = {
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds"),
            "cpus": probe.cpus(), "cpus_online": probe.online_cpus(), "threads": self.threads,
            "omp_wait_policy": wait_policy(), "governor": probe.governor(),
            "before": before_figures(probe, self.threads),
        }
        text = session_busy_text(self.record)
        if text:
            _warn(f"the machine is busy: {text}")
        self._sampler = LoadSampler(probe, self.interval).start()
        return self

    def add_to(self, manifest: dict[str, Any], threads: int | None = None) -> None:
        """Append this session to ``manifest`` (``threads``: the count the run's backend settled on)."""
        if threads:
            self.record["threads"] = threads
        state = manifest.get(MACHINE_STATE)
        if not isinstance(state, dict) or not isinstance(state.get("sessions"), list):
            state = manifest[MACHINE_STATE] = {"sessions": sessions(manifest)}
        state["sessions"].append(self.record)
        self._in_manifest = True

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        during = self._sampler.stop() if self._sampler is not None else None
        load = self.probe.load_avg()
        self.record.update(during=during, after={"load_avg_1min": None if load is None else round(load, 3)},
                           completed=kind is None)
        text = session_busy_text(self.record)
        if text and during is not None and during.get("other_cpu_cores") is not None:
            _warn(f"the machine was not idle during this run: {text}")
        if not self._in_manifest:
            return
        try:
            self._write_end()
        except (OSError, RunFileError):
            if kind is None:
                raise  # (while another error is on its way out, that one is the one to report)

    def _write_end(self) -> None:
        if not (self.run_dir / MANIFEST_FILE).is_file():
            return
        manifest = read_manifest(self.run_dir)
        mine = [s for s in sessions(manifest) if s.get("started") == self.record["started"]]
        if mine:
            mine[-1].update(self.record)
            write_json_atomic(self.run_dir / MANIFEST_FILE, manifest, indent=2)


def require_quiet(threads: int | None) -> None:
    """``--require-quiet``: measure other processes' CPU share for ``QUIET_CHECK_S`` and refuse to start
    (a one-line ``UserError``) while it is busy; where the share cannot be read, the load average decides."""
    probe = machine_probe.default_probe()
    threads = threads or torch.get_num_threads()
    cpus, load = probe.cpus(), probe.load_avg()
    other = measure_other_cores(probe, QUIET_CHECK_S)
    load_text = f" (load {load:.1f})" if load is not None else ""
    if other is not None and is_busy(other, cpus, threads):
        raise UserError(f"the machine is busy: other processes used {other:.1f} of {cpus} cores over the last "
                        f"{QUIET_CHECK_S:g} s{load_text}; --require-quiet refuses to start")
    if other is None and load_says_busy(load, probe.online_cpus(), threads):
        raise UserError(f"the machine is busy: load average {load:.1f} on {probe.online_cpus()} cores; "
                        "--require-quiet refuses to start")
