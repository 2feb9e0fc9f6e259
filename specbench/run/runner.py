"""The benchmark runner: executes a ``Plan`` with warm-up, interleaved timing, resume and the lossless check.

Order of work: for each task, question and turn, every method runs (``ar`` first) before the next
question, so machine drift hits all methods alike. Each method gets warm-up generations before any
timing, on drafters (and draft budgets) built for the warm-up alone, so nothing a drafter learns across
generations comes from them. After each timed generation the drafter of that (method, task) may
``learn`` from its finished output; a resumed run replays that from the records in plan order
(``drafter_state.py``). With ``--repeats`` only repeat 0 is learned from, and every repeat of a unit starts
from the drafter and budget state before its repeat 0 (``RepeatIsolation``). The batched jobs
(``batch_runner.py``) and an engine under test's (``serving_runs.py``) follow; all three share one driver
(``driver.py``: prompts fit-checked before the timing, one timing idiom, warm-up parts, records written) and
one way to learn and replay (``drafter_state.py``: a sequence's drafter is a pool of one).
At temperature > 0 every generation samples with a seed derived from ``--seed`` and its unit
(``specbench.engine.sampling_config.generation_seed``), the token-for-token lossless check is skipped (outputs differ
legitimately) and each record carries its mean target log-probability per token instead. Records are appended and fsynced one by one; re-running the same command skips the records
already present. MT-Bench turn 2 is prompted with the AR baseline's turn-1 answer for every method.
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

from specbench.catalog import BASELINE
from specbench.budget.contract import WHOLE_DRAFT, Budget
from specbench.engine.generation import Generation
from specbench.engine.backends.torch_backends import backend_for
from specbench.engine.loop import Engine
from specbench.engine.sampling_config import generation_seed
from specbench.files.content_hash import skipping_verification
from specbench.engine.backends.registry import load_model_for
from specbench.models.loading import LoadedModel, stop_token_ids
from specbench.prompts.task import Question
from specbench.prompts.templates import PROBE, ChatTemplate, resolve_template
from specbench.results.record import Record, Unit
from specbench.results.run_folder import RecordWriter, read_manifest
from specbench.results.validation import read_validated_records
from specbench.run.batch_jobs import batch_jobs
from specbench.run.batch_runner import BatchRuns
from specbench.run.budgets import build_budgets
from specbench.run.context import Row, RunContext
from specbench.run.compile_record import record_compile
from specbench.run.context_fit import check_up_front
from specbench.run.drafter_state import DrafterPools, RepeatIsolation, first_pending, replay
from specbench.run.driver import SequenceJob, job_rows, timed_generations, warm_parts
from specbench.run.estimate_run import announce_estimate
from specbench.run.guards import (check_attention_layout, check_run_folder, check_same_config, check_same_model,
                                  check_same_prompts, other_commit)
from specbench.run.lock import RunLock
from specbench.run.machine_session import MachineSession
from specbench.run.manifest import git_commit, write_run_manifest
from specbench.run.plugin_guard import check_same_plugins
from specbench.run.method_env import MethodEnv
from specbench.run.method_requirements import check_model_requirements
from specbench.run.method_faults import method_faults
from specbench.run.plan import Plan, config_digest
from specbench.run.references import References
from specbench.run.serving_rows import concurrency_jobs
from specbench.run.serving_runs import ServingRuns
from specbench.run.stall_watch import StallWatch
from specbench.run.progress_bar import SeededBar


class Runner:
    """Executes a ``Plan`` into ``run_dir`` (resuming when records exist)."""

    def __init__(self, plan: Plan, run_dir: Path, loaded: LoadedModel | None = None, progress: bool = True,
                 require_quiet: bool = False) -> None:
        self.plan = plan
        self.require_quiet = require_quiet  # a stalled generation stops the run instead of being written (StallWatch)
        self.cfg = plan.config
        self.run_dir = run_dir
        self.loaded = loaded
        self.progress = progress
        # the lossless references (AR's, and an engine's engine:off) and the verdicts against them
        self.refs = References(plan.config.sampling.greedy, plan.config.tie_threshold)
        self.servers: ServingRuns | None = None
        self.sampling = plan.config.sampling
        self.ctx: RunContext | None = None  # what the run's helpers read of it, once the engine is up
        self.digest: str | None = None
        self._template: ChatTemplate | None = None
        self.longest_context = 0  # cached tokens the longest generation reaches (prompt, later turns, answers)
        self.estimate: Any = None  # the up-front estimate of the run (estimate_run.py), when progress is shown
        self.machine: MachineSession | None = None  # this invocation's machine state (the manifest's machine_state)

    # -- setup -------------------------------------------------------------------------------
    def _build_drafters(self) -> tuple[dict[tuple[str, str], Any], dict[str, Any], dict[str, Any]]:
        drafters: dict[tuple[str, str], Any] = {}
        configs: dict[str, Any] = {}
        artifacts: dict[str, Any] = {}
        for method in self.plan.methods:
            for task in self.plan.tasks:
                drafter, cfg, env = self._build_one(method, task)
                drafters[(method, task)] = drafter
                configs[method] = cfg
                if env.artifacts:
                    artifacts.setdefault(method, {})[task] = env.artifacts
        return drafters, configs, artifacts

    def _build_one(self, method: str, task: str) -> tuple[Any, dict[str, Any], MethodEnv]:
        """A fresh drafter of ``method`` for ``task`` (None for AR), its config and the env its factory filled."""
        return self.ctx.new_drafter(method, task)

    # -- timing ------------------------------------------------------------------------------
    def _timed(self, prompt: list[int], drafter: Any, record_margins: bool = False, seed: int = 0,
               budget: Budget = WHOLE_DRAFT) -> tuple[Generation, float, tuple[str, int]]:
        """(generation, wall seconds, its peak memory ``(kind, bytes)``), timed as a batch is
        (``driver.timed_generations``: the process's CPU seconds over the same span go to ``gen.cpu_time_s``)."""
        generate = lambda: [self.engine.generate(prompt, drafter, self.cfg.max_new_tokens,  # noqa: E731
                                                 record_margins=record_margins,
                                                 sampling=self.sampling, seed=seed, budget=budget)]
        (gen,), timing = timed_generations(self.loaded.device, generate)
        return gen, timing.wall_s, timing.memory

    # -- main loop ---------------------------------------------------------------------------
    def prompt_for(self, unit: Unit, q: Question) -> list[int]:
        """Prompt ids of ``unit``'s turn (1-based): earlier turns carry the AR baseline's answers."""
        task = self.plan.tasks[unit.task]
        answers = [
            self.loaded.tokenizer.decode(self.refs.ar_outputs[Unit(unit.task, unit.question_id, t)],
                                         skip_special_tokens=True)
            for t in range(1, unit.turn)
        ]
        return self.template.encode(self.loaded.tokenizer, task.messages(q, unit.turn - 1, answers))

    @property
    def template(self) -> ChatTemplate:
        """The run's conversation template (``--chat-template``), resolved once for the loaded tokenizer."""
        if self._template is None:
            lm = self.loaded
            self._template = resolve_template(self.cfg.chat_template, lm.tokenizer, lm.model_id,
                                              getattr(lm.model, "config", None))
        return self._template

    def template_record(self) -> dict[str, Any]:
        """The manifest's ``chat_template``: what was asked, what ran, and a hash of the first prompt's text."""
        task, qs = next((t, qs) for t, qs in self.plan.questions.items() if qs)
        first = self.plan.tasks[task].messages(qs[0], 0, [])
        tok = self.loaded.tokenizer
        return {"requested": self.cfg.chat_template, "name": self.template.name,
                "first_prompt_sha256": self.template.digest(tok, first),
                "probe_sha256": self.template.digest(tok, PROBE)}  # the same in every shard of a run

    def execute(self) -> int:
        """Run all missing records; returns the number of lossless MISMATCH records (this run + resumed)."""
        digest = config_digest(self.plan)
        check_run_folder(self.run_dir)
        created = not self.run_dir.exists()
        try:  # --no-verify: artifacts are trusted by their recorded hashes (noted in the manifest)
            with RunLock(self.run_dir), skipping_verification(not self.cfg.verify), \
                    contextlib.ExitStack() as self._exits, MachineSession(self.run_dir, self.cfg.threads) as self.machine:
                self.digest = digest
                return self._run_locked(digest)
        finally:
            if created and self.run_dir.is_dir() and not any(self.run_dir.iterdir()):
                self.run_dir.rmdir()  # a run that failed before writing anything leaves no empty folder

    def _run_locked(self, digest: str) -> int:
        check_same_config(self.run_dir, digest)
        check_same_plugins(self.run_dir)
        if self.loaded is None:
            self.loaded = load_model_for(self.cfg.backend, self.cfg.model, self.cfg.dtype, self.cfg.device,
                                         self.cfg.threads)
        lm = self.loaded
        check_same_model(self.run_dir, lm.model_hash)
        check_attention_layout(lm.model)
        check_same_prompts(self.run_dir, self.template_record())
        if (warning := other_commit(self.run_dir, git_commit())) is not None:
            print(f"warning: {warning}", file=sys.stderr)
        encode = lambda conversation: self.template.encode(lm.tokenizer, conversation)  # noqa: E731
        self.longest_context = check_up_front(self.plan, lm.model, lm.tokenizer, encode, self.prompt_for)
        check_model_requirements(self.plan, lm.model)  # (before any build: a method that cannot run stops it now)
        self.engine = Engine(lm.model, stop_token_ids(lm.tokenizer, lm.model), backend_for(self.cfg.backend, lm, self.cfg.threads))
        self.refs.target = self.engine.target  # the AR-margin forward of the lossless check runs on the same backend
        self.run_dir.mkdir(parents=True, exist_ok=True)
        ctx = self.ctx = RunContext(self.plan, self.run_dir, lm, self.engine, self.prompt_for, self.longest_context,
                                    digest, self.checked)
        self.estimate = announce_estimate(ctx) if self.progress else None  # before the first-use builds it counts
        drafters, configs, artifacts = self._build_drafters()
        self.drafters = drafters
        ctx.budgets = build_budgets(ctx)
        self.servers = self._exits.enter_context(ServingRuns(ctx, encode))  # (servers up, or no-op)
        self.refs.margin_at = self.servers.margin_at
        configs.update({m: self.plan.options_of(m) for m in self.plan.engine_methods})
        write_run_manifest(ctx, configs, artifacts, self.template_record(), estimate=self.estimate,
                           machine=self.machine, engine=self.servers.describe())

        existing = read_validated_records(self.run_dir, read_manifest(self.run_dir))
        records = {r.key: r for r in existing}
        done = set(records)
        self.refs.resume(existing)

        jobs = list(self.plan.jobs())
        todo = [(unit, q, method) for unit, q, method in jobs if (method, unit) not in done]
        batched = BatchRuns(ctx, records)
        pending, engine_pending = batched.pending(done), self.servers.pending(done)
        if not todo and not pending and not engine_pending:
            return self.refs.mismatches
        isolation = RepeatIsolation(self.cfg.repeats)
        pools = DrafterPools(lambda method, task: self._build_one(method, task)[0])
        for slot, drafter in drafters.items():  # a sequence's pool: its one drafter, built above
            pools.open(slot, [drafter])
        replay([SequenceJob(m, u, q) for u, q, m in jobs if m in self.plan.methods], records, self.prompt_for,
               isolation, pools, ctx.budgets.by_slot)
        total = len(jobs) + sum(len(j.units) for j in (*batch_jobs(self.plan), *concurrency_jobs(self.plan)))
        left = len(todo) + sum(sum((j.method, u) not in done for u in j.units) for j in pending + engine_pending)
        bar = SeededBar(self.estimate and self.estimate.per_record_s, len(self.plan.all_methods), total=total,
                        initial=total - left, desc="bench", unit="gen", disable=not self.progress, file=sys.stderr,
                        dynamic_ncols=True)
        with RecordWriter(self.run_dir) as records:
            writer = StallWatch(records, refuse=self.require_quiet, seen=existing)
            if todo:
                bar.set_postfix_str("warm-up (untimed)")
                self._warm_up(todo)
                bar.unpause()  # the warm-up's minutes stay out of the rate, so the ETA counts timed generations only
            for unit, q, method in todo:
                bar.set_postfix_str(f"{unit.task}/{unit.question_id} t{unit.turn} {method}", refresh=False)
                job = SequenceJob(method, unit, q)
                row, = job_rows(ctx, job)  # (its prompt built and fit-checked outside the timing)
                if method not in self.plan.methods:  # an engine's row: the engine under test does the work
                    writer.write(self.servers.one(row))
                    bar.update(1)
                    continue
                drafter, budget = isolation.parts_for(job.slot, job.units, pools.parts(job, ctx.budgets.by_slot))
                rec = self._one(row, drafter, budget)
                writer.write(rec)
                if isolation.learns(unit):
                    pools.learn(job.slot, row.prompt, rec.output_ids)
                bar.update(1)
            if pending:
                bar.set_postfix_str("batched warm-up (untimed)")
                batched.warm_up(pending)
                bar.unpause()
            for job in pending:
                bar.set_postfix_str(f"batch {job.size} {job.units[0].task} t{job.units[0].turn} {job.method}",
                                    refresh=False)
                bar.update(batched.time_job(job, done, writer))
            for job in engine_pending:
                bar.set_postfix_str(f"concurrency {job.level} {job.units[0].task} t{job.units[0].turn} {job.method}",
                                    refresh=False)
                bar.update(self.servers.time_job(job, done, writer))
        bar.close()
        record_compile(self.run_dir, self.engine.backend.describe(lm.model))  # (what a compiled backend compiled)
        return self.refs.mismatches

    def _warm_up(self, todo: list[tuple[Unit, Question, str]]) -> None:
        """Warm every method left to time on every task (first calls, caches and kernels happen here, not
        inside a timed generation), on the turn-1 prompt of that task's first pending question.

        The warm-up runs on parts built for it alone (``driver.warm_parts``: drafters and draft budgets of its
        own, so nothing it teaches reaches a timed generation), dropped after each task."""
        if not self.cfg.warmup:
            return
        for task, q in first_pending(todo).items():
            prompt = self.prompt_for(Unit(task, q.question_id, 1), q)
            parts = {m: warm_parts(self.ctx, m, task, 1) for m in self.plan.methods}
            for _ in range(self.cfg.warmup):
                for method in self.plan.methods:
                    (drafter,), budget = parts[method]
                    with method_faults(method):
                        self.engine.generate(prompt, drafter, self.cfg.max_new_tokens,
                                             record_margins=method == BASELINE and self.sampling.greedy,
                                             sampling=self.sampling, budget=budget)

    def _one(self, row: Row, drafter: Any, budget: Budget) -> Record:
        """``row``'s timed generation, its record checked (its prompt built and fit-checked outside the timing)."""
        method, unit, prompt = row.method, row.unit, row.prompt
        greedy = self.sampling.greedy
        seed = generation_seed(self.cfg.seed, unit.task, unit.question_id, unit.turn, unit.repeat)
        with method_faults(method):  # (a drafter's fault: one line naming it; the records before it stay)
            self.engine.warm_up(len(prompt) + self.cfg.max_new_tokens, drafter)  # (a compiled backend's shapes)
            gen, wall, memory = self._timed(prompt, drafter,
                                            record_margins=method == BASELINE and greedy, seed=seed,
                                            budget=budget)
        return self.checked(self.ctx.record(gen, row, wall, memory), unit, prompt)

    def checked(self, rec: Record, unit: Unit, prompt: list[int]) -> Record:
        """``rec`` with its lossless verdict (``References.checked``)."""
        return self.refs.checked(rec, unit, prompt)
