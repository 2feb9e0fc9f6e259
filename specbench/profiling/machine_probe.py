"""Reading the machine's state: load average, CPU time spent on this process's cores, its own CPU time,
core counts and the CPU frequency governor. Every reader returns None where the system does not say
(no ``/proc`` or ``/sys`` outside Linux, a container hiding them): callers record null, never fail.

``SystemProbe`` is the real machine; tests pass a probe of their own with the same methods (a scripted
load, a virtual clock), so nothing in a test depends on how busy the machine running it is.

>>> a = CpuReading(wall_s=0.0, busy_s=10.0, own_s=4.0)
>>> b = CpuReading(wall_s=10.0, busy_s=25.0, own_s=9.0)
>>> other_cores(a, b)  # 15 busy core-seconds in 10 s, 5 of them ours: others kept 1 core busy
1.0
"""
from __future__ import annotations

import glob
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

PROC_STAT = Path("/proc/stat")
GOVERNOR_FILES = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
# /proc/stat's per-CPU columns: user nice system idle iowait irq softirq steal (guest time is inside user);
# busy = all but idle and iowait. steal counts: a hypervisor giving our core to another guest is "other".
BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class CpuReading:
    """Cumulative CPU seconds at one moment (``wall_s``, a monotonic clock): ``busy_s`` spent by every
    process on the cores this one may use (None where ``/proc/stat`` is unreadable), ``own_s`` by this one."""

    wall_s: float
    busy_s: float | None
    own_s: float  # (this process's, and its children's: an engine under test's servers are the run's own work)


def other_cores(start: CpuReading, end: CpuReading) -> float | None:
    """Cores other processes kept busy on average between two readings (None when unknown)."""
    elapsed = end.wall_s - start.wall_s
    if start.busy_s is None or end.busy_s is None or elapsed <= 0:
        return None
    # clock-tick rounding can make the difference slightly negative on an idle machine
    return max(0.0, ((end.busy_s - start.busy_s) - (end.own_s - start.own_s)) / elapsed)


def live_children_s(ticks_per_s: float, parent: int | None = None) -> float:
    """CPU seconds spent so far by the live children of ``parent`` (this process): the servers of an engine under
    test; 0 where ``/proc`` cannot be read. (A reaped child's time is in ``os.times``' children fields.)

    >>> live_children_s(100.0, parent=2**31 - 1)
    0.0
    """
    parent = os.getpid() if parent is None else parent
    total = 0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rpartition(")")[2].split()
            if int(fields[1]) == parent:
                total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
        except (OSError, ValueError, IndexError):
            continue
    return total / ticks_per_s


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (all of them where affinity is unknown)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return list(range(os.cpu_count() or 1))


def busy_seconds(cpus: list[int], stat_text: str, ticks_per_s: float) -> float | None:
    """Busy seconds of ``cpus`` (indices) summed from ``/proc/stat`` text; None if a CPU's line is missing.

    >>> busy_seconds([1], "cpu  9 9 9 9 9 9 9 9\\ncpu0 1 0 1 50 0 0 0 0\\ncpu1 300 0 100 50 7 0 0 0\\n", 100)
    4.0
    """
    rows: dict[int, list[int]] = {}
    for line in stat_text.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit():
            rows[int(name[3:])] = [int(v) for v in rest.split()]
    if not all(c in rows and len(rows[c]) > max(BUSY_COLUMNS) for c in cpus):
        return None
    return sum(rows[c][i] for c in cpus for i in BUSY_COLUMNS) / ticks_per_s


class Probe(Protocol):
    """What the machine-state code reads; ``SystemProbe`` is the real machine, tests script their own."""

    def load_avg(self) -> float | None: ...
    def reading(self) -> CpuReading: ...
    def cpus(self) -> int: ...
    def online_cpus(self) -> int | None: ...
    def governor(self) -> str | None: ...
    def sleep(self, seconds: float) -> None: ...


class SystemProbe:
    """This machine, read through ``os``, ``/proc`` and ``/sys``."""

    def __init__(self) -> None:
        self._cpus = usable_cpus()
        try:
            self._ticks = float(os.sysconf("SC_CLK_TCK"))
        except (ValueError, OSError, AttributeError):
            self._ticks = 100.0

    def load_avg(self) -> float | None:
        """The 1-minute load average: runnable (and disk-waiting) tasks, averaged over the last minute."""
        try:
            return os.getloadavg()[0]
        except (OSError, AttributeError):
            return None

    def reading(self) -> CpuReading:
        times = os.times()
        try:
            busy = busy_seconds(self._cpus, PROC_STAT.read_text(), self._ticks)
        except (OSError, ValueError):
            busy = None
        own = times.user + times.system + times.children_user + times.children_system  # (children: those reaped)
        return CpuReading(time.monotonic(), busy, own + live_children_s(self._ticks))

    def cpus(self) -> int:
        """Cores this process may use."""
        return len(self._cpus)

    def online_cpus(self) -> int | None:
        """Cores of the whole machine (what the load average is spread over)."""
        return os.cpu_count()

    def governor(self) -> str | None:
        """The CPU frequency governor(s) of this process's cores, comma-separated if they differ; None if unreadable."""
        found = set()
        for path in glob.glob(GOVERNOR_FILES):
            cpu = Path(path).parent.parent.name[3:]
            if cpu.isdigit() and int(cpu) in self._cpus:
                try:
                    found.add(Path(path).read_text().strip())
                except OSError:
                    continue
        return ",".join(sorted(found)) or None

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


_SYSTEM: SystemProbe | None = None


def default_probe() -> Probe:
    """The probe runs use (tests replace this function on the module to inject their own)."""
    global _SYSTEM
    if _SYSTEM is None:
        _SYSTEM = SystemProbe()
    return _SYSTEM
