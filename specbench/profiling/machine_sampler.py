"""Measuring the machine over a span: other processes' CPU share between two readings, and a daemon thread
sampling the load average and that share every few seconds while a run goes on.

The mean share over the whole span comes from its first and last readings alone, so it is exact however
few samples fit in; the samples add the load average and the worst interval.

>>> from specbench.profiling.machine_probe import CpuReading
>>> class Still:  # a probe whose clock and counters stand still: no time passes, nothing is known
...     def reading(self): return CpuReading(0.0, None, 0.0)
...     def load_avg(self): return None
>>> LoadSampler(Still(), interval=60).start().stop()
{'seconds': 0.0, 'other_cpu_cores': None, 'other_cpu_cores_peak': None, 'load_avg_mean': None, 'load_avg_max': None, 'samples': 0}
"""
from __future__ import annotations

import threading
from typing import Any

from specbench.profiling.machine_probe import CpuReading, Probe, other_cores
from specbench.profiling.machine_state import CONFIRM_S, SAMPLE_INTERVAL_S, load_says_busy


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def measure_other_cores(probe: Probe, seconds: float) -> float | None:
    """Cores other processes kept busy over the next ``seconds`` (``probe.sleep`` waits them out)."""
    start = probe.reading()
    probe.sleep(seconds)
    return other_cores(start, probe.reading())


def before_figures(probe: Probe, threads: int | None) -> dict[str, Any]:
    """The machine as a run starts: its load average and, only when that load says busy, other processes'
    share measured over ``CONFIRM_S`` (the load trails by a minute: the share says whether it is busy now)."""
    load = probe.load_avg()
    other = measure_other_cores(probe, CONFIRM_S) if load_says_busy(load, probe.online_cpus(), threads) else None
    return {"load_avg_1min": _round(load), "other_cpu_cores": _round(other)}


class LoadSampler:
    """Samples ``probe`` every ``interval`` seconds on a daemon thread from ``start()`` to ``stop()``;
    ``stop()`` returns the span's figures. The thread never keeps the process alive and stops within one
    wait of ``stop()``; call ``stop()`` in a ``finally`` (``MachineSession`` does)."""

    def __init__(self, probe: Probe, interval: float = SAMPLE_INTERVAL_S) -> None:
        self.probe, self.interval = probe, interval
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._loads: list[float] = []
        self._peak: float | None = None
        self._first: CpuReading | None = None

    def start(self) -> "LoadSampler":
        self._first = self.probe.reading()
        self._thread = threading.Thread(target=self._loop, name="specbench-machine-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        previous = self._first
        while not self._halt.wait(self.interval):
            now = self.probe.reading()
            share = other_cores(previous, now)  # type: ignore[arg-type]
            if share is not None:
                self._peak = share if self._peak is None else max(self._peak, share)
            load = self.probe.load_avg()
            if load is not None:
                self._loads.append(load)
            previous = now

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> dict[str, Any]:
        """Stop the thread and return the span's figures: seconds, other processes' mean and peak share in
        cores, the load average's mean and maximum over the samples, and the number of samples."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 5)
        last = self.probe.reading()
        first = self._first or last
        loads = list(self._loads)
        return {
            "seconds": _round(last.wall_s - first.wall_s),
            "other_cpu_cores": _round(other_cores(first, last)),
            "other_cpu_cores_peak": _round(self._peak),
            "load_avg_mean": _round(sum(loads) / len(loads)) if loads else None,
            "load_avg_max": _round(max(loads)) if loads else None,
            "samples": len(loads),
        }
