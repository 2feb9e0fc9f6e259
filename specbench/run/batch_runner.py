"""Timing the batched work of a run (``batch_jobs.py``): one batched generation per job, a record per sequence.

Each job's sequences each get their own drafter instance (a drafter keeps one sequence's state), built
the way the runner builds the method's own, one pool per (method, task, batch size). A drafter that
learns across generations (``drafter_state.py``) learns every finished output of its pool's earlier jobs,
each instance all of them, in plan order (a resumed run replays them from the records first); what a
drafter learns while decoding (Token Recycling's matrix) stays its own slot's. With ``--repeats`` a pool
learns repeat 0's outputs alone, and every repeat of a job starts from the pool's and budget's state before
its repeat 0 (``drafter_state.RepeatIsolation``; a resumed run keeps it where the uninterrupted one did).
Warm-up runs on instances of its own. A job is
timed whole (``batch_wall_time_s``); each of its records gets an equal share as ``wall_time_s``, so the
pooled tokens over pooled time of a batch's records is its throughput. Every sequence is checked token
for token against AR at batch size 1 (``Unit.reference``), AR's batched outputs included.

A job is redone whole when any of its records is missing (its records are written together once it
finishes, so an interrupted run resumes at a job boundary); records already present are not rewritten.
"""
from __future__ import annotations

import time
from typing import Any

from specbench.catalog import BASELINE
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.budget import DraftBudget
from specbench.engine.sampling_config import generation_seed
from specbench.models.device import synchronize
from specbench.profiling.memory import peak_memory, reset_peak
from specbench.run.batch_jobs import BatchJob, batch_jobs
from specbench.run.drafter_state import RepeatIsolation, learn
from specbench.run.context_fit import checked_fit
from specbench.run.method_faults import method_faults
from specbench.run.context import RunContext

WARMUP_TOKENS = 16  # a warm-up batch only needs its kernels and drafters' first calls, not a whole answer


class BatchRuns:
    """The batched part of ``ctx``'s run."""

    def __init__(self, ctx: RunContext, existing: dict | None = None) -> None:
        self.ctx = ctx
        self.existing = existing or {}  # (method, unit) -> Record already written (replayed into new pools)
        self.pools: dict[tuple[str, str, int], list[Any]] = {}
        self._learned: dict[tuple[str, str, int], list[tuple[list[int], list[int]]]] = {}
        self.isolation = RepeatIsolation(ctx.cfg.repeats)  # keyed by pool: (method, task, size)

    def pending(self, done: set) -> list[BatchJob]:
        """The jobs with at least one record missing."""
        return [job for job in batch_jobs(self.ctx.plan) if any((job.method, u) not in done for u in job.units)]

    def drafters(self, method: str, task: str, size: int, count: int) -> list[Any]:
        """``count`` drafter instances of ``method`` for ``task`` at batch size ``size`` (a new pool first
        learns the finished records of its earlier jobs)."""
        key = (method, task, size)
        if key not in self.pools:
            self.pools[key] = []
            self._replay(method, task, size)
        return self._grown(key, count)

    def _grown(self, key: tuple[str, str, int], count: int) -> list[Any]:
        """The first ``count`` instances of pool ``key``, the ones it lacks built now."""
        pool = self.pools[key]
        while len(pool) < count:
            pool.append(self._fresh(key[0], key[1]))
            for prompt, output in self._learned.get(key, []):  # a late instance catches up with its pool
                learn(pool[-1], prompt, output)
        return pool[:count]

    def _fresh(self, method: str, task: str) -> Any:
        return self.ctx.new_drafter(method, task)[0]

    def _learn(self, key: tuple[str, str, int], prompt: list[int], output: list[int]) -> None:
        self._learned.setdefault(key, []).append((prompt, output))
        for drafter in self.pools.get(key, []):
            learn(drafter, prompt, output)

    def _replay(self, method: str, task: str, size: int) -> None:
        """Learn the pool's finished jobs in plan order (repeat 0's; a job redone whole learns when it runs),
        keeping the state a job's later repeats start from where some are still to run."""
        r, key = self.ctx, (method, task, size)
        for job in batch_jobs(r.plan):
            mine = (job.method, job.size, job.units[0].task) == (method, size, task)
            if not mine or not self.isolation.learns(job.units[0]) or any((method, u) not in self.existing
                                                                          for u in job.units):
                continue
            if self.isolation.later_pending(method, job.units, self.existing):
                parts = [*self._grown(key, min(size, len(job.units))), r.budgets.auto.get((method, task))]
                self.isolation.keep(key, job.units, parts)
            for unit, q in zip(job.units, job.questions):
                self._learn(key, r.prompt_for(unit.reference(), q), self.existing[(method, unit)].output_ids)

    def warm_up(self, jobs: list[BatchJob]) -> None:
        """One short batched generation per (batch size, task, method) left to time, on its first job's prompts."""
        seen = set()
        for job in jobs:
            key = (job.size, job.units[0].task, job.method)
            if key not in seen:
                seen.add(key)
                n = min(job.size, len(job.units))
                drafters = None if job.method == BASELINE else [self._fresh(job.method, key[1]) for _ in range(n)]
                budgets = self.ctx.budgets
                budget = DraftBudget(budgets.cost) if (job.method, key[1]) in budgets.auto else None
                self._generate(job, min(WARMUP_TOKENS, self.ctx.cfg.max_new_tokens), drafters=drafters,
                               budget=budget)

    def time_job(self, job: BatchJob, done: set, writer: Any) -> int:
        """Time ``job`` and write the records it lacks; returns how many were written."""
        r = self.ctx
        device = r.loaded.device
        prompts = [r.prompt_for(u.reference(), q) for u, q in zip(job.units, job.questions)]  # outside the timing
        for unit, prompt in zip(job.units, prompts):
            checked_fit(r.run_dir, r.loaded.model, len(prompt), r.cfg.max_new_tokens, str(unit))
        key = (job.method, job.units[0].task, job.size)
        live = [] if job.method == BASELINE else self.drafters(*key, min(job.size, len(job.units)))
        *drafters, budget = self.isolation.parts_for(key, job.units, [*live, r.budgets.auto.get(key[:2])])
        synchronize(device)
        reset_peak(device)
        c0, t0 = time.process_time(), time.perf_counter()
        gens = self._generate(job, r.cfg.max_new_tokens, prompts, drafters or None, budget)
        synchronize(device)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        for gen in gens:  # (an equal share, like the wall time's)
            gen.cpu_time_s = cpu / len(job.units)
        memory = peak_memory(device)
        written = 0
        for prompt, gen in zip(prompts, gens):  # the pool learns the job's outputs, in plan order
            if self.isolation.learns(job.units[0]):
                self._learn(key, prompt, gen.output_ids)
        for unit, q, prompt, gen in zip(job.units, job.questions, prompts, gens):
            if (job.method, unit) in done:
                continue
            rec = r.record(gen, job.method, unit, q, prompt, wall / len(job.units), memory, batch_wall=wall)
            writer.write(r.checked(rec, unit, prompt))
            done.add((job.method, unit))
            written += 1
        return written

    def _generate(self, job: BatchJob, max_new_tokens: int, prompts: list[list[int]] | None = None,
                  drafters: list[Any] | None = None, budget: DraftBudget | None = None) -> list[Any]:
        r = self.ctx
        prompts = prompts or [r.prompt_for(u.reference(), q) for u, q in zip(job.units, job.questions)]
        requests = [Request(p, generation_seed(r.cfg.seed, u.task, u.question_id, u.turn, u.repeat))
                    for u, p in zip(job.units, prompts)]
        decoder = BatchDecoder(r.engine, max_new_tokens, sampling=r.sampling, budget=budget,
                               batch_cost=r.budgets.batch_cost, max_draft_depth=r.budgets.fixed_depths.get(job.method))
        with method_faults(job.method):
            return decoder.generate(requests, drafters, job.size, job.refill)
