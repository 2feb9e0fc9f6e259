"""Stalled generations: a record whose time was not spent computing, derived when it is read.

A process stopped mid-generation (SIGSTOP, a suspended VM, a laptop lid) or starved of every core keeps its wall
clock running and its CPU clock still: one such stop of 20 s during AR's generation left one decode step of
20.07 s against a median of 0.057 s, and made ``pld`` read 8.10x at tau 1.00. Two tests, each enough, at every
batch size:

- **CPU time** (records of schema 10 that measured it; an engine's rows do not: its work is another process's),
  in CPU seconds per wall second (its *rate*, ``specbench.results.cpu_rates``; a batched record's equal shares
  give its batch's), with at least ``LOST_S`` seconds unaccounted (a batched record: its batch's):

  - below ``CPU_SHARE`` of a core (``wall - cpu`` unaccounted): a running generation keeps at least its main
    thread busy (torch's threads, llama.cpp's, or the one thread that waits on a GPU's synchronisation, spinning
    or yielding), so it ran for less than half its time; this needs no other record;
  - below ``RATE_SHARE`` of its run's *typical rate* (``wall - cpu / typical`` unaccounted): the median rate of
    the run's other records of its method at its batch size, at least one core (or the run's median rate, where
    that is lower), its own batch left out (``cpu_rates.RunRates``). A stop in a process that keeps about one core
    can read more than half a core (a 15 s stop in a batch of two read 8.65 CPU s in 16.25 wall s per record), and
    in one that keeps eight cores far more; against what its run keeps while running, both are far below. Not
    against the threads it may use: a GPU run keeps one core of sixteen, a tiny model leaves torch's second thread
    idle, and ``threads x wall`` would flag every record of both. ``RATE_SHARE`` leaves a quiet record room to
    stray from its peers (a longer prompt's prefill uses the threads better) and still catches that batch's 0.53
    of a core against a typical one.
- **One step out of its generation's distribution** (at least ``MIN_STEPS`` decode steps; the prefill's entry is
  not compared, a long prompt's is legitimately long): a decode step longer than ``STEP_FACTOR`` times the median
  decode step and longer than the median by ``STEP_S`` seconds. A generation's decode steps vary by a few times at
  most (drafting or not, a deeper tree; in a batch, a forward that shrinks as sequences finish); twenty times and a
  second on top of it is a stop. A batched sequence's decode steps are the batch's steps while it was in it
  (``engine/batch_loop.py``: each is the whole batched step, every slot's draft, verify and emit); a refilled
  slot's prefill runs between two steps (``_release`` -> ``_admit``), outside every step's clock, so it lands in
  no other sequence's steps, only in its own first entry (a stop there is the CPU test's to see).

Thresholds are generous so a quiet run flags nothing (``docs/how-it-measures.md``, "Implausible speedups and
stalls"; under ``--require-quiet`` a stalled generation is refused, ``specbench.run.stall_watch``).

>>> from types import SimpleNamespace as R
>>> stall_reason(R(method="ar", cpu_time_s=0.3, wall_time_s=20.4, batch_wall_time_s=None, batch_size=None,
...                step_times_s=[0.1] + [0.057] * 5 + [20.07] + [0.057] * 5))
'its process ran 0.30 CPU s in 20.40 wall s (20.10 s not running); one decode step took 20.07 s against a median of 0.057 s'
>>> stall_reason(R(method="ar", cpu_time_s=4.1, wall_time_s=2.1, batch_wall_time_s=None, batch_size=None,
...                step_times_s=[0.1] + [0.057] * 30)) is None
True

That batch of two (above half a core), judged against its run's other records at about a core:

>>> def rec(q, cpu, wall, size=None, batch=None):
...     return R(method="pld", unit=f"gsm8k/{q}", cpu_time_s=cpu, wall_time_s=wall, batch_size=size,
...              batch_wall_time_s=batch, step_times_s=None)
>>> run = [rec(1, 2.0, 2.1), rec(2, 1.9, 2.0), rec(1, 8.65, 16.25, 2, 32.5), rec(2, 8.65, 16.25, 2, 32.5)]
>>> stall_reason(run[2], RunRates(run))
"its process ran 8.65 CPU s in 16.25 wall s (its share of the batch's): 0.53 cores against its run's 0.95 (14.31 s not running)"
>>> quiet = run[:2] + [rec(q, 15.9, 16.25, 2, 32.5) for q in (1, 2)]
>>> [stall_reason(r, RunRates(quiet)) for r in quiet]
[None, None, None, None]
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any, Iterable

from specbench.catalog import BASELINE, is_baseline
from specbench.results.cpu_rates import RunRates, rate

CPU_SHARE = 0.5  # CPU seconds per wall second below which a generation was not running
RATE_SHARE = 0.65  # ... or this share of its run's typical rate (cpu_rates.py)
LOST_S = 1.0  # ... and at least this many wall seconds unaccounted for
STEP_FACTOR = 20.0  # a decode step this many times the median ...
STEP_S = 1.0  # ... and this many seconds above it is a stop
MIN_STEPS = 3  # decode steps a generation needs before one of them can stand out


def cpu_stall(rec: Any, rates: RunRates | None = None) -> str | None:
    """Why ``rec``'s CPU time says its process was not running, or None (not measured, or it ran); ``rates``: its
    run's (None: the core test alone)."""
    r = rate(rec)
    if r is None:
        return None
    cpu, wall = rec.cpu_time_s, rec.wall_time_s
    batched = rec.batch_size and rec.batch_size > 1 and rec.batch_wall_time_s
    scale = rec.batch_wall_time_s / wall if batched else 1.0  # (a batched record's times: its share of the batch's)
    share = " (its share of the batch's)" if batched else ""
    if r < CPU_SHARE and (wall - cpu) * scale >= LOST_S:
        return f"its process ran {cpu:.2f} CPU s in {wall:.2f} wall s{share} ({(wall - cpu) * scale:.2f} s not running)"
    typical = rates.typical(rec) if rates is not None else None
    if typical and r < RATE_SHARE * typical and (wall - cpu / typical) * scale >= LOST_S:
        return (f"its process ran {cpu:.2f} CPU s in {wall:.2f} wall s{share}: {r:.2f} cores against its run's "
                f"{typical:.2f} ({(wall - cpu / typical) * scale:.2f} s not running)")
    return None


def step_stall(rec: Any) -> str | None:
    """Why one of ``rec``'s decode steps stands out of its generation's distribution, or None (any batch size: a
    batched sequence's steps are its batch's, module docstring)."""
    decode = list(rec.step_times_s or [])[1:]
    if len(decode) < MIN_STEPS:
        return None
    mid = median(decode)
    worst = max(decode)
    if worst <= max(STEP_FACTOR * mid, mid + STEP_S):
        return None
    return f"one decode step took {worst:.2f} s against a median of {mid:.3g} s"


def stall_reason(rec: Any, rates: RunRates | None = None) -> str | None:
    """Both tests' findings in one line (None: the generation was not seen stalling); ``rates``: its run's."""
    found = [r for r in (cpu_stall(rec, rates), step_stall(rec)) if r]
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
    """The stalled ones among ``records`` (a run's: each is judged against the others), in their order."""
    records = list(records)
    rates, out = RunRates(records), []
    for r in records:
        reason = stall_reason(r, rates)
        if reason:
            out.append(Stall(r.method, r.unit, r.subtask, reason))
    return out
