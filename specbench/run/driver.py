"""One driver for a run's three paths: a sequence timed alone (``runner.py``), a batch of them (``batch_runner.py``)
and an engine under test's requests (``serving_runs.py``). Each path decodes its own way; what they share is here:

- **a job** (``Job``): a method on some units of one task and turn (``SequenceJob`` is the job of one sequence,
  ``BatchJob`` and ``ConcurrencyJob`` the others), and where specbench decodes it (``DraftedJob``), its drafters'
  slot and how many sequences it decodes at once;
- **its rows** (``job_rows``): each unit's prompt, tokenised and checked against the model's context before any
  timing (a prompt past it is noted in the manifest and stops the run, ``context_fit.checked_fit``);
- **the timing idiom** (``timed_generations``): the device synchronised and its peak memory reset before the
  clock starts; the wall seconds (``perf_counter``) and the process's CPU seconds (``process_time``) over the
  same span, so a stall shows as wall time not running (``specbench.results.stalls``); the device synchronised
  again before the clock stops; the peak read after. A job's generations each get an equal share of its CPU
  seconds, as its records get of its wall seconds; one sequence gets them all. (An engine under test is timed by
  its requests, ``serving/session.py``: its CPU is another process's.)
- **a warm-up's parts** (``warm_parts``): drafters built as the timed ones are and, for ``budget=auto``, a budget
  of its own, so nothing a warm-up teaches reaches a timed generation;
- **its records** (``write_missing``): the job's records it lacks, each with its lossless verdict, written through
  the stall watch (``stall_watch.py``) and marked done.

Learning and replay across generations, for sequences and pools alike, are ``drafter_state.py``'s.

Example, as the batched runner times a job::

    rows = job_rows(ctx, job)                                     # prompts built and fit-checked, untimed
    gens, t = timed_generations(ctx.loaded.device, lambda: decode([r.prompt for r in rows]))
    write_missing(ctx, rows, lambda i: ctx.record(gens[i], rows[i], t.wall_s / len(rows), t.memory,
                                                  batch_wall=t.wall_s), done, writer)

>>> from types import SimpleNamespace
>>> job = SequenceJob("pld", Unit("gsm8k", "1", 2), None)
>>> job.slot, job.width
(('pld', 'gsm8k'), 1)
>>> ctx = SimpleNamespace(checked=lambda rec, unit, prompt: rec + " checked")
>>> rows, done = [Row("pld", Unit("gsm8k", q, 1), None, [1, 2]) for q in "12"], {("pld", Unit("gsm8k", "1", 1))}
>>> write_missing(ctx, rows, lambda i: f"record {i}", done, SimpleNamespace(write=print))
record 1 checked
1
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Protocol, Sequence

from specbench.budget.contract import Budget
from specbench.models.device import synchronize
from specbench.profiling.memory import peak_memory, reset_peak
from specbench.prompts.task import Question
from specbench.results.record import Record, Unit
from specbench.run.context import Row, RunContext
from specbench.run.context_fit import checked_fit


class Job(Protocol):
    """What the driver reads of a job: ``method`` on ``units`` (one task, one turn) with their ``questions``."""

    method: str
    units: tuple[Unit, ...]
    questions: tuple[Question, ...]


class DraftedJob(Job, Protocol):
    """A job specbench decodes (``drafter_state.py`` reads it): ``slot``, the drafters' pool that times it and
    learns its outputs; ``width``, the sequences it decodes at once (the drafter instances it needs)."""

    @property
    def slot(self) -> Hashable: ...

    @property
    def width(self) -> int: ...


@dataclass(frozen=True)
class SequenceJob:
    """A generation timed alone (batch size 1): ``method`` on ``unit``; its drafter's slot is (method, task)."""

    method: str
    unit: Unit
    question: Question

    @property
    def units(self) -> tuple[Unit, ...]:
        return (self.unit,)

    @property
    def questions(self) -> tuple[Question, ...]:
        return (self.question,)

    @property
    def slot(self) -> tuple[str, str]:
        return (self.method, self.unit.task)

    @property
    def width(self) -> int:
        return 1


@dataclass(frozen=True)
class Timing:
    """What one timed piece of work measured: wall seconds, the process's CPU seconds, peak memory (kind, bytes)."""

    wall_s: float
    cpu_s: float
    memory: tuple[str, int]


def job_rows(ctx: RunContext, job: Job) -> list[Row]:
    """The rows of ``job``, one per unit: its prompt (later turns carry AR's batch-1 answers, ``Unit.reference``),
    each checked to fit the model with the run's new tokens; built before the timing starts."""
    rows = [Row(job.method, u, q, ctx.prompt_for(u.reference(), q)) for u, q in zip(job.units, job.questions)]
    for row in rows:
        checked_fit(ctx.run_dir, ctx.loaded.model, len(row.prompt), ctx.cfg.max_new_tokens, str(row.unit))
    return rows


def timed_generations(device: Any, generate: Callable[[], list[Any]]) -> tuple[list[Any], Timing]:
    """``generate()``'s generations and its ``Timing``; each generation's ``cpu_time_s`` its equal share of the CPU
    seconds (the peak is reset outside the timing)."""
    synchronize(device)
    reset_peak(device)
    c0, t0 = time.process_time(), time.perf_counter()
    gens = generate()
    synchronize(device)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for gen in gens:  # (an equal share, like the wall time's)
        gen.cpu_time_s = cpu / len(gens)
    return gens, Timing(wall, cpu, peak_memory(device))


def warm_parts(ctx: RunContext, method: str, task: str, count: int) -> tuple[list[Any], Budget]:
    """Fresh parts for a warm-up of ``method`` on ``task``: ``count`` drafters built the way the timed ones are
    (their artifacts not recorded again) and, for a ``budget=auto`` method, a budget of its own priced with the
    run's costs. A drafter or budget that learns across generations would otherwise have seen the first timed
    question's answer before it is timed, and a resumed run, whose warm-up is on another question, would not give
    the same records."""
    return [ctx.new_drafter(method, task)[0] for _ in range(count)], ctx.new_budget(method)


def write_missing(ctx: RunContext, rows: Sequence[Row], record_of: Callable[[int], Record], done: set,
                  writer: Any) -> int:
    """Write the record of each row not in ``done`` (``record_of(i)``: row i's, before its lossless verdict), checked
    (``RunContext.checked``) and marked done; returns how many were written. A job is redone whole when any of its
    records is missing, and the records already there are not written again."""
    written = 0
    for i, row in enumerate(rows):
        if (row.method, row.unit) in done:
            continue
        writer.write(ctx.checked(record_of(i), row.unit, row.prompt))
        done.add((row.method, row.unit))
        written += 1
    return written
