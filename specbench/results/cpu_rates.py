"""The CPU rate a run keeps while it runs: what the CPU-time stall test compares each record with
(``specbench.results.stalls``).

A record's **rate** is its CPU seconds per wall second (``cpu_time_s / wall_time_s``: the cores its process kept
busy; a batched record's equal shares give its batch's rate). A quiet run's rate lies between one core (the main
thread: Python, drafting, or waiting on a GPU) and the threads it may use (torch's during a forward), and where in
that range is the run's own affair: a GPU run keeps about one core of sixteen, a tiny model leaves torch's second
thread idle. So a record is compared with its own run, not with its threads: its **typical rate** is

- the median rate of its **peers** (the run's other records of its method at its batch size: the same work),
- but at least the **floor**: one core, or the median rate of all the run's other records where that is lower
  (a run whose waits let the CPU sleep keeps less than a core everywhere, and that is its normal);

its own job's records (itself; at a batch size above one, its batch: they share one rate) left out, so a stopped
batch does not set its own standard. A record with no other record to compare has no typical rate.

>>> from types import SimpleNamespace as R
>>> def rec(method, cpu, wall, size=None, batch_wall=None, q=0):
...     return R(method=method, unit=f"gsm8k/{q}", cpu_time_s=cpu, wall_time_s=wall, batch_size=size,
...              batch_wall_time_s=batch_wall)

A run at 2 torch threads keeping 1.8 cores in AR's records, 1.2 in pld's; its pld batch of two stopped 15 s
(8.65 CPU s in 16.25 wall s per record, as one was seen) has no peer, so the floor judges it:

>>> run = [rec("ar", 1.8, 1.0, q=1), rec("ar", 3.6, 2.0, q=2), rec("pld", 1.2, 1.0, q=1), rec("pld", 2.4, 2.0, q=2),
...        rec("pld", 8.65, 16.25, 2, 32.5, q=1), rec("pld", 8.65, 16.25, 2, 32.5, q=2)]
>>> rates = RunRates(run)
>>> rates.typical(run[2]), rates.typical(run[4])
(1.2, 1.0)

A GPU-like run, one core of sixteen threads everywhere, is its own normal; a lone record has nothing to go by:

>>> gpu = [rec("ar", 0.9, 1.0, q=1), rec("ar", 0.95, 1.0, q=2), rec("pld", 0.8, 1.0)]
>>> RunRates(gpu).typical(gpu[2]), RunRates(gpu[:1]).typical(gpu[0])
(0.925, None)
"""
from __future__ import annotations

from bisect import bisect_left, insort
from statistics import median
from typing import Any, Hashable, Iterable

FLOOR_CORES = 1.0  # a running process keeps at least its main thread busy (unless its whole run does less)


def rate(rec: Any) -> float | None:
    """``rec``'s CPU seconds per wall second (None: not measured, an engine's row)."""
    cpu, wall = rec.cpu_time_s, rec.wall_time_s
    return cpu / wall if cpu is not None and wall and wall > 0 else None


def job_of(rec: Any) -> Hashable:
    """The job ``rec`` was timed in: itself alone (its method and unit, the record's key), or its batch (its
    method, size and the batch's wall seconds, which all of its batch's records carry and another batch's all but
    never share)."""
    if rec.batch_size and rec.batch_size > 1 and rec.batch_wall_time_s:
        return ("batch", rec.method, rec.batch_size, rec.batch_wall_time_s)
    return ("alone", rec.method, str(rec.unit))


def _peers(rec: Any) -> tuple[str, int]:
    return rec.method, rec.batch_size or 1


def _median_without(ordered: list[float], mine: list[float]) -> float | None:
    """The median of the sorted ``ordered`` with one copy of each of ``mine`` taken out (None: nothing left).

    >>> _median_without([1.0, 2.0, 2.0, 5.0], [2.0, 5.0]), _median_without([1.0], [1.0])
    (1.5, None)
    """
    rest = ordered[:]  # (a copy and a few deletions: C-speed even for thousands of records)
    for r in mine:
        at = bisect_left(rest, r)
        if at < len(rest) and rest[at] == r:
            del rest[at]
    return median(rest) if rest else None


class RunRates:
    """The rates of a run's records, sorted, all together and by peers, and each job's; ``add`` as records come
    (``StallWatch``) or all at once (``stalled``)."""

    def __init__(self, records: Iterable[Any] = ()) -> None:
        self.every: list[float] = []
        self.groups: dict[tuple[str, int], list[float]] = {}
        self.jobs: dict[Hashable, list[float]] = {}
        for r in records:
            self.add(r)

    def add(self, rec: Any) -> None:
        r = rate(rec)
        if r is not None:
            insort(self.every, r)
            insort(self.groups.setdefault(_peers(rec), []), r)
            self.jobs.setdefault(job_of(rec), []).append(r)

    def typical(self, rec: Any) -> float | None:
        """The rate ``rec``'s run keeps (module docstring), its own job left out; None when no other record has one."""
        mine = self.jobs.get(job_of(rec), [])
        run = _median_without(self.every, mine)
        if run is None:
            return None
        floor = min(FLOOR_CORES, run)
        peers = _median_without(self.groups.get(_peers(rec), []), mine)
        return floor if peers is None else max(peers, floor)
