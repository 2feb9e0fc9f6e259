"""The benchmark runner: executes a ``Plan`` with warm-up, interleaved timing, resume and the lossless check.

Order of work: for each task, question and turn, every method runs (``ar`` first) before the next
question, so machine drift hits all methods alike. Each method gets warm-up generations before any
timing. At temperature > 0 every generation samples with a seed derived from ``--seed`` and its unit
(``specbench.engine.sampling_config.generation_seed``), the token-for-token lossless check is skipped (outputs differ
legitimately) and each record carries its mean target log-probability per token instead. Records are appended and fsynced one by one; re-running the same command skips the records
already present. MT-Bench turn 2 is prompted with the AR baseline's turn-1 answer for every method.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from specbench.catalog import BASELINE
from specbench.config.method_labels import BUDGET_KEY
from specbench.engine.budget import AUTO, DraftBudget
from specbench.engine.generation import Generation
from specbench.engine.loop import Engine
from specbench.engine.margins import recorded_or_recomputed
from specbench.engine.sampling_config import generation_seed
from specbench.files.content_hash import skipping_verification, verified_files
from specbench.files.jsonfile import write_json_atomic
from specbench.models.device import synchronize
from specbench.models.loading import LoadedModel, load_model, stop_token_ids, vocab_size
from specbench.paths import cache_dir
from specbench.profiling.cost_profile import cached_cost_profile, cost_function
from specbench.profiling.memory import peak_memory, reset_peak
from specbench.profiling.profile import load_profile, save_profile
from specbench.prompts.task import Question
from specbench.prompts.templates import PROBE, ChatTemplate, resolve_template
from specbench.results.lossless import MISMATCH, classify
from specbench.results.record import Record, Unit
from specbench.results.run_folder import MANIFEST_FILE, PROFILE_FILE, RecordWriter, read_manifest
from specbench.results.validation import read_validated_records
from specbench.run.guards import (check_context, check_run_folder, check_same_config, check_same_model,
                                  check_same_prompts)
from specbench.run.lock import RunLock
from specbench.run.manifest import build_manifest
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter
from specbench.run.plan import Plan, config_digest

TURN_ALLOWANCE = 64  # tokens a turn's chat-template markup may add around its text (only sizes the cost profile)


class Runner:
    """Executes a ``Plan`` into ``run_dir`` (resuming when records exist)."""

    def __init__(self, plan: Plan, run_dir: Path, loaded: LoadedModel | None = None, progress: bool = True) -> None:
        self.plan = plan
        self.cfg = plan.config
        self.run_dir = run_dir
        self.loaded = loaded
        self.progress = progress
        self.ar_outputs: dict[Unit, list[int]] = {}  # AR outputs of repeat 0: references and turn-2 context
        self.ar_margins: dict[Unit, list[float] | None] = {}  # their per-token top-2 margins (lossless ties)
        self.mismatches = 0
        self.sampling = plan.config.sampling
        self.budgets: dict[tuple[str, str], DraftBudget] = {}  # (method label, task) -> its budget=auto state
        self.profile_path: str | None = None
        self.digest: str | None = None
        self._template: ChatTemplate | None = None
        self.longest_context = 0  # cached tokens the longest generation reaches (prompt, later turns, answers)

    # -- setup -------------------------------------------------------------------------------
    def _build_drafters(self) -> tuple[dict[tuple[str, str], Any], dict[str, Any], dict[str, Any]]:
        lm = self.loaded
        drafters: dict[tuple[str, str], Any] = {}
        configs: dict[str, Any] = {}
        artifacts: dict[str, Any] = {}
        for method in self.plan.methods:
            for task in self.plan.tasks:
                env = MethodEnv.for_task(lm, self.plan.data_dir, cache_dir(), task)
                drafter, cfg = build_drafter(method, self.plan.options_of(method), env)
                drafters[(method, task)] = drafter
                configs[method] = cfg
                if env.artifacts:
                    artifacts.setdefault(method, {})[task] = env.artifacts
        return drafters, configs, artifacts

    def _build_budgets(self, configs: dict[str, Any]) -> dict[tuple[str, str], DraftBudget]:
        """A ``DraftBudget`` per (auto method, task), its acceptance learned over that method's generations
        on that task; the machine's cost profile is measured once (cached) and copied into the run folder."""
        auto = [m for m in self.plan.methods if configs[m].get(BUDGET_KEY) == AUTO]
        if not auto:
            return {}
        kept = self.run_dir / PROFILE_FILE
        if kept.is_file():  # a resumed run keeps pricing drafts with the profile its first part used
            profile, path = load_profile(kept), kept
        else:  # (validated by the load: a damaged cached profile never reaches the run folder)
            profile, path = cached_cost_profile(self.loaded, self.engine.backend.name, cache_dir(),
                                                longest=self.longest_context)
        cost = cost_function(profile)
        if not kept.is_file():
            save_profile(profile, kept)
        self.profile_path = str(path)
        return {(m, t): DraftBudget(cost) for m in auto for t in self.plan.tasks}

    def _write_manifest(self, digest: str, configs: dict, artifacts: dict) -> None:
        lm = self.loaded
        manifest = build_manifest(
            device=lm.device,
            run_name=self.run_dir.name,
            config_digest=digest,
            config=dataclasses.asdict(self.cfg) | {"methods": self.plan.methods, "tasks": list(self.plan.tasks)},
            shard=list(self.plan.shard) if self.plan.shard else None,
            model={"id": lm.model_id, "hash": lm.model_hash, "dtype": lm.dtype, "tf32": lm.tf32,
                   "device": str(lm.device), "class": type(lm.model).__name__, "vocab_size": vocab_size(lm.model),
                   "verified": lm.verification},
            verified_files=verified_files(),
            backend=self.engine.backend.describe(lm.model),
            method_configs=configs,
            artifacts=artifacts,
            data_dir=str(self.plan.data_dir) if self.plan.data_dir else None,
            questions={t: [q.question_id for q in qs] for t, qs in self.plan.questions.items()},
            turns={t: [len(q.turns) for q in qs] for t, qs in self.plan.questions.items()},
            task_versions={t: task.version for t, task in self.plan.tasks.items()},
            subtasks={t: task.subtask for t, task in self.plan.tasks.items()},
            sampling=self.sampling.as_dict(),
            chat_template=self.template_record(),
        )
        lengths = {t: {"requested": task.context_length, "prompt_tokens": task.prompt_tokens}
                   for t, task in self.plan.tasks.items() if task.context_length is not None}
        if lengths:  # long-input tasks: the length asked for and the prompt length built (cut to fit the model)
            manifest["context_lengths"] = lengths
        if self.budgets:
            manifest["cost_profile"] = {"file": PROFILE_FILE, "cached": self.profile_path}
        path = self.run_dir / MANIFEST_FILE
        if path.is_file():  # a resumed run keeps its first manifest and notes each resumption
            old = read_manifest(self.run_dir)
            keep = ("timestamp", "git_commit", "hardware", "verified_files")
            old.setdefault("resumed", []).append({k: manifest[k] for k in keep} | {"model_verified": lm.verification})
            manifest = old
        write_json_atomic(path, manifest, indent=2)

    # -- timing ------------------------------------------------------------------------------
    def _timed(self, prompt: list[int], drafter: Any, record_margins: bool = False, seed: int = 0,
               budget: DraftBudget | None = None) -> tuple[Generation, float, tuple[str, int]]:
        """(generation, wall seconds, its peak memory ``(kind, bytes)``); the peak is reset outside the timing."""
        device = self.loaded.device
        synchronize(device)
        reset_peak(device)
        t0 = time.perf_counter()
        gen = self.engine.generate(prompt, drafter, self.cfg.max_new_tokens, record_margins=record_margins,
                                   sampling=self.sampling, seed=seed, draft_budget=budget)
        synchronize(device)
        wall = time.perf_counter() - t0
        return gen, wall, peak_memory(device)

    # -- main loop ---------------------------------------------------------------------------
    def prompt_for(self, unit: Unit, q: Question) -> list[int]:
        """Prompt ids of ``unit``'s turn (1-based): earlier turns carry the AR baseline's answers."""
        task = self.plan.tasks[unit.task]
        answers = [
            self.loaded.tokenizer.decode(self.ar_outputs[Unit(unit.task, unit.question_id, t)], skip_special_tokens=True)
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

    def run(self) -> int:
        """Run all missing records; returns the number of lossless MISMATCH records (this run + resumed)."""
        digest = config_digest(self.plan)
        check_run_folder(self.run_dir)
        created = not self.run_dir.exists()
        try:  # --no-verify: artifacts are trusted by their recorded hashes (noted in the manifest)
            with RunLock(self.run_dir), skipping_verification(not self.cfg.verify):
                self.digest = digest
                return self._run_locked(digest)
        finally:
            if created and self.run_dir.is_dir() and not any(self.run_dir.iterdir()):
                self.run_dir.rmdir()  # a run that failed before writing anything leaves no empty folder

    def _run_locked(self, digest: str) -> int:
        check_same_config(self.run_dir, digest)
        if self.loaded is None:
            self.loaded = load_model(self.cfg.model, self.cfg.dtype, self.cfg.device)
        lm = self.loaded
        check_same_model(self.run_dir, lm.model_hash)
        check_same_prompts(self.run_dir, self.template_record())
        self._check_turn1_context()
        self.engine = Engine(lm.model, stop_token_ids(lm.tokenizer, lm.model), self.cfg.backend)
        self.target = self.engine.target  # the AR-margin forward of the lossless check runs on the same backend
        self.run_dir.mkdir(parents=True, exist_ok=True)
        drafters, configs, artifacts = self._build_drafters()
        self.budgets = self._build_budgets(configs)
        self._write_manifest(digest, configs, artifacts)

        existing = read_validated_records(self.run_dir, read_manifest(self.run_dir))
        done = {r.key for r in existing}
        for r in existing:
            if r.method == BASELINE and r.repeat == 0:
                self.ar_outputs[r.unit] = r.output_ids
                self.ar_margins[r.unit] = r.token_margins
            self.mismatches += r.lossless_class == MISMATCH

        jobs = list(self.plan.jobs())
        todo = [(unit, q, method) for unit, q, method in jobs if (method, unit) not in done]
        if not todo:
            return self.mismatches
        self._warm_up(drafters, todo)
        bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc="bench", unit="gen",
                   disable=not self.progress, file=sys.stderr, dynamic_ncols=True)
        with RecordWriter(self.run_dir) as writer:
            for unit, q, method in todo:
                bar.set_postfix_str(f"{unit.task}/{unit.question_id} t{unit.turn} {method}", refresh=False)
                writer.write(self._one(drafters[(method, unit.task)], unit, q, method))
                bar.update(1)
        bar.close()
        return self.mismatches

    def _check_turn1_context(self) -> None:
        """Every turn-1 prompt fits the model (later turns also carry earlier answers: they are checked again
        in ``_one`` before they run); notes the longest context the run will reach (the cost profile's)."""
        tok, per_turn = self.loaded.tokenizer, self.cfg.max_new_tokens + TURN_ALLOWANCE
        for task, qs in self.plan.questions.items():
            for q in qs:
                prompt = self.prompt_for(Unit(task, q.question_id, 1), q)
                check_context(self.loaded.model, len(prompt), self.cfg.max_new_tokens, f"{task}/{q.question_id}")
                later = sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in q.turns[1:])
                self.longest_context = max(self.longest_context, len(prompt) + later + per_turn * len(q.turns))

    def _warm_up(self, drafters: dict, todo: list[tuple[Unit, Question, str]]) -> None:
        """Warm every drafter left to time (each task's own: first calls, caches and kernels happen here,
        not inside a timed generation), on the turn-1 prompt of that task's first pending question."""
        first: dict[str, tuple[Unit, Question]] = {}
        for unit, q, _method in todo:
            first.setdefault(unit.task, (unit, q))
        for task, (unit, q) in first.items():
            prompt = self.prompt_for(Unit(task, unit.question_id, 1), q)
            for _ in range(self.cfg.warmup):
                for method in self.plan.methods:
                    self.engine.generate(prompt, drafters[(method, task)], self.cfg.max_new_tokens,
                                         record_margins=method == BASELINE and self.sampling.greedy,
                                         sampling=self.sampling, draft_budget=self.budgets.get((method, task)))

    def _one(self, drafter: Any, unit: Unit, q: Question, method: str) -> Record:
        prompt = self.prompt_for(unit, q)  # tokenisation outside the timed window
        check_context(self.loaded.model, len(prompt), self.cfg.max_new_tokens, str(unit))
        greedy = self.sampling.greedy
        seed = generation_seed(self.cfg.seed, unit.task, unit.question_id, unit.turn, unit.repeat)
        gen, wall, (memory_kind, memory_peak) = self._timed(prompt, drafter, record_margins=method == BASELINE and greedy,
                                                            seed=seed, budget=self.budgets.get((method, unit.task)))
        task = self.plan.tasks[unit.task]
        rec = Record.from_generation(gen, method=method, unit=unit, subtask=task.subtask_for(q), task_version=task.version,
                                     category=q.category, prompt_tokens=len(prompt), wall_time_s=wall,
                                     memory=(memory_kind, memory_peak), sampling=self.sampling.as_dict(),
                                     config_digest=self.digest,
                                     context_length=task.context_length)
        if method == BASELINE:
            if unit.repeat == 0:
                self.ar_outputs[unit] = gen.output_ids
                self.ar_margins[unit] = rec.token_margins
            return rec
        if not greedy:  # sampled outputs differ from AR's by design: checked in distribution instead
            return rec
        ref_unit = unit.reference()
        ref = self.ar_outputs[ref_unit]
        margin = recorded_or_recomputed(self.ar_margins.get(ref_unit), self.target, prompt, ref)
        result = classify(ref, gen.output_ids, margin, self.cfg.tie_threshold)
        self.mismatches += result.lossless_class == MISMATCH
        return dataclasses.replace(rec, **result.as_record())
