"""Stalled generations: a record whose time was not spent computing, derived when it is read.

A process stopped mid-generation (SIGSTOP, a suspended VM, a laptop lid) or starved of every core keeps its wall
clock running and its CPU clock still: one such stop of 20 s during AR's generation left one decode step of
20.07 s against a median of 0.057 s, and made ``pld`` read 8.10x at tau 1.00. Two tests, each enough:

- **CPU time** (records of schema 10 that measured it; an engine's rows do not: its work is another process's):
  a running generation keeps at least its main thread busy, so over its wall time it uses at least a core's worth
  of CPU seconds (torch's threads, llama.cpp's, or the one thread that waits on a GPU's synchronisation, spinning or
  yielding). A generation whose CPU seconds are below ``CPU_SHARE`` of its wall seconds, with at least ``LOST_S``
  seconds unaccounted (``wall - cpu``; a batched record: its batch's), was not running for that long.
- **One step out of its generation's distribution** (a generation decoded alone, at least ``MIN_STEPS`` decode
  steps; the prefill's entry is not compared, a long prompt's is legitimately long): a decode step longer than
  ``STEP_FACTOR`` times the median decode step and longer than the median by ``STEP_S`` seconds. A generation's
  decode steps vary by a few times at most (drafting or not, a deeper tree); twenty times and a second on top of
  it is a stop. Batched records are left out of this test: a refilled slot's prefill lands in the others' steps.

Thresholds are generous so a quiet run flags nothing (``docs/how-it-measures.md``, "Implausible speedups and
stalls"; under ``--require-quiet`` a stalled generation is refused, ``specbench.run.stall_watch``).

>>> from types import SimpleNamespace as R
>>> stall_reason(R(cpu_time_s=0.3, wall_time_s=20.4, batch_wall_time_s=None, batch_size=None,
...                step_times_s=[0.1] + [0.057] * 5 + [20.07] + [0.057] * 5))
'its process ran 0.30 CPU s in 20.40 wall s (20.10 s not running); one decode step took 20.07 s against a median of 0.057 s'
>>> stall_reason(R(cpu_time_s=4.1, wall_time_s=2.1, batch_wall_time_s=None, batch_size=None,
...                step_times_s=[0.1] + [0.057] * 30)) is None
True
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any, Iterable

from specbench.catalog import BASELINE, is_baseline

CPU_SHARE = 0.5  # CPU seconds per wall second below which a generation was not running
LOST_S = 1.0  # ... and at least this many wall seconds unaccounted for
STEP_FACTOR = 20.0  # a decode step this many times the median ...
STEP_S = 1.0  # ... and this many seconds above it is a stop
MIN_STEPS = 3  # decode steps a generation needs before one of them can stand out


def cpu_stall(rec: Any) -> str | None:
    """Why ``rec``'s CPU time says its process was not running, or None (not measured, or it ran)."""
    cpu, wall = rec.cpu_time_s, rec.wall_time_s
    if cpu is None or wall <= 0:
        return None
    scale = (rec.batch_wall_time_s / wall) if rec.batch_size and rec.batch_size > 1 and rec.batch_wall_time_s else 1.0
    lost = (wall - cpu) * scale  # (a batched record's times are its equal share of the batch's)
    if cpu >= CPU_SHARE * wall or lost < LOST_S:
        return None
    share = " (its share of the batch's)" if scale != 1.0 else ""
    return f"its process ran {cpu:.2f} CPU s in {wall:.2f} wall s{share} ({lost:.2f} s not running)"


def step_stall(rec: Any) -> str | None:
    """Why one of ``rec``'s decode steps stands out of its generation's distribution, or None."""
    if rec.batch_size and rec.batch_size > 1:
        return None
    decode = list(rec.step_times_s or [])[1:]
    if len(decode) < MIN_STEPS:
        return None
    mid = median(decode)
    worst = max(decode)
    if worst <= max(STEP_FACTOR * mid, mid + STEP_S):
        return None
    return f"one decode step took {worst:.2f} s against a median of {mid:.3g} s"


def stall_reason(rec: Any) -> str | None:
    """Both tests' findings in one line (None: the generation was not seen stalling)."""
    found = [r for r in (cpu_stall(rec), step_stall(rec)) if r]
    return "; ".join(found) or None


@dataclass(frozen=True)
class Stall:
    """A stalled record: its method, unit and subtask, and why (``stall_reason``)."""

    method: str
    unit: Any
    subtask: str
    reason: str

    def touched(self) -> str:
        """The cells its time enters: a baseline's record every speedup against it, else its method's own.

        >>> Stall("ar", "gsm8k/1 turn 1 repeat 0", "GSM8K", "x").touched()
        "every method's GSM8K and Overall speedups (the baseline's time they divide by)"
        >>> Stall("engine:ngram", "gsm8k/1 turn 1 repeat 0", "GSM8K", "x").touched()
        "engine:ngram's GSM8K and Overall cells"
        """
        if is_baseline(self.method):
            rows = "every method's" if self.method == BASELINE else "every engine row's"
            return f"{rows} {self.subtask} and Overall speedups (the baseline's time they divide by)"
        return f"{self.method}'s {self.subtask} and Overall cells"

    def line(self) -> str:
        """``ar gsm8k/1 turn 1 repeat 0: one decode step took ...; touches every method's ...``."""
        return f"{self.method} {self.unit}: {self.reason}; touches {self.touched()}"


def stalled(records: Iterable[Any]) -> list[Stall]:
    """The stalled ones among ``records``, in their order."""
    out = []
    for r in records:
        reason = stall_reason(r)
        if reason:
            out.append(Stall(r.method, r.unit, r.subtask, reason))
    return out
