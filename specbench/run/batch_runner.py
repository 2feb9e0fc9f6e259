"""Timing the batched work of a run (``batch_jobs.py``): one batched generation per job, a record per sequence.

Each job's sequences each get their own drafter instance (a drafter keeps one sequence's state), built
the way the runner builds the method's own, one pool per (method, task, batch size). A drafter that
learns across generations (``drafter_state.py``) learns every finished output of its pool's earlier jobs,
each instance all of them, in plan order (a resumed run replays them from the records first); what a
drafter learns while decoding (Token Recycling's matrix) stays its own slot's. With ``--repeats`` a pool
learns repeat 0's outputs alone, and every repeat of a job starts from the pool's and budget's state before
its repeat 0 (``drafter_state.RepeatIsolation``; a resumed run keeps it where the uninterrupted one did).
Warm-up runs on instances of its own. A job is timed whole
(``batch_wall_time_s``, with the driver's idiom, as a sequence is: ``driver.py``); each of its records gets an
equal share as ``wall_time_s``, so the pooled tokens over pooled time of a batch's records is its throughput. Every
sequence is checked token for token against AR at batch size 1 (``Unit.reference``), AR's batched outputs included.

A job is redone whole when any of its records is missing (its records are written together once it
finishes, so an interrupted run resumes at a job boundary); records already present are not rewritten.
"""
from __future__ import annotations

from typing import Any

from specbench.catalog import BASELINE
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.budget.contract import WHOLE_DRAFT, Budget
from specbench.engine.sampling_config import generation_seed
from specbench.run.batch_jobs import BatchJob, batch_jobs
from specbench.run.context import RunContext
from specbench.run.drafter_state import DrafterPools, RepeatIsolation, replay
from specbench.run.driver import job_rows, timed_generations, warm_parts, write_missing
from specbench.run.method_faults import method_faults

WARMUP_TOKENS = 16  # a warm-up batch only needs its kernels and drafters' first calls, not a whole answer


class BatchRuns:
    """The batched part of ``ctx``'s run."""

    def __init__(self, ctx: RunContext, existing: dict | None = None) -> None:
        self.ctx = ctx
        self.existing = existing or {}  # (method, unit) -> Record already written (replayed into new pools)
        self.pools = DrafterPools(lambda method, task: ctx.new_drafter(method, task)[0])
        self.isolation = RepeatIsolation(ctx.cfg.repeats)  # keyed by pool: (method, task, size)

    def pending(self, done: set) -> list[BatchJob]:
        """The jobs with at least one record missing."""
        return [job for job in batch_jobs(self.ctx.plan) if any((job.method, u) not in done for u in job.units)]

    def parts(self, job: BatchJob) -> list[Any]:
        """What times ``job`` live: its pool's drafter instances (none for AR), then its budget. A new pool first
        learns its finished jobs in plan order (``drafter_state.replay``)."""
        r = self.ctx
        if job.method == BASELINE:
            return [r.budgets.budget_for(*job.slot[:2])]
        if job.slot not in self.pools:
            self.pools.open(job.slot)
            mine = [j for j in batch_jobs(r.plan) if j.slot == job.slot]
            replay(mine, self.existing, r.prompt_for, self.isolation, self.pools, r.budgets.by_slot)
        return self.pools.parts(job, r.budgets.by_slot)

    def warm_up(self, jobs: list[BatchJob]) -> None:
        """One short batched generation per (batch size, task, method) left to time, on its first job's prompts."""
        seen = set()
        for job in jobs:
            key = (job.size, job.units[0].task, job.method)
            if key not in seen:
                seen.add(key)
                count = 0 if job.method == BASELINE else job.width  # (AR decodes with no drafter)
                drafters, budget = warm_parts(self.ctx, job.method, key[1], count)
                self._generate(job, min(WARMUP_TOKENS, self.ctx.cfg.max_new_tokens), drafters=drafters or None,
                               budget=budget)

    def time_job(self, job: BatchJob, done: set, writer: Any) -> int:
        """Time ``job`` and write the records it lacks; returns how many were written."""
        r, n = self.ctx, len(job.units)
        rows = job_rows(r, job)  # (outside the timing)
        prompts = [row.prompt for row in rows]
        *drafters, budget = self.isolation.parts_for(job.slot, job.units, self.parts(job))
        decode = lambda: self._generate(job, r.cfg.max_new_tokens, prompts, drafters or None, budget)  # noqa: E731
        gens, t = timed_generations(r.loaded.device, decode)
        if self.isolation.learns(job.units[0]):  # the pool learns the job's outputs, in plan order
            for prompt, gen in zip(prompts, gens):
                self.pools.learn(job.slot, prompt, gen.output_ids)
        share = t.wall_s / n  # each record's share of the job's time
        return write_missing(r, rows, lambda i: r.record(gens[i], rows[i], share, t.memory, batch_wall=t.wall_s),
                             done, writer)

    def _generate(self, job: BatchJob, max_new_tokens: int, prompts: list[list[int]] | None = None,
                  drafters: list[Any] | None = None, budget: Budget = WHOLE_DRAFT) -> list[Any]:
        r = self.ctx
        prompts = prompts or [r.prompt_for(u.reference(), q) for u, q in zip(job.units, job.questions)]
        requests = [Request(p, generation_seed(r.cfg.seed, u.task, u.question_id, u.turn, u.repeat))
                    for u, p in zip(job.units, prompts)]
        decoder = BatchDecoder(r.engine, max_new_tokens, sampling=r.sampling,
                               budget=budget, batch_cost=r.budgets.batch_cost)
        with method_faults(job.method):
            return decoder.generate(requests, drafters, job.size, job.refill)
