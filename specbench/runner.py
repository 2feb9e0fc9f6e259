"""The benchmark runner: job matrix, warm-up, interleaved timing, resume, lossless check, records.

Order of work: for each task, question and turn, every method runs (``ar`` first) before the next
question, so machine drift hits all methods alike. Each method gets warm-up generations before any
timing. Records are appended and fsynced one by one; re-running the same command skips the records
already present. MT-Bench turn 2 is prompted with the AR baseline's turn-1 answer for every method.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from specbench.config import ConfigError, RunConfig, cache_dir, default_data_dir
from specbench.engine.loop import Engine, Generation
from specbench.lossless import MISMATCH, classify, default_tie_threshold
from specbench.manifest import build_manifest
from specbench.method_env import MethodEnv
from specbench.methods_factory import build_drafter, method_config
from specbench.model import LoadedModel, load_model, stop_token_ids
from specbench.records import MANIFEST_FILE, RecordWriter, read_manifest, read_records, record_key
from specbench.registry import METHODS, TASKS
from specbench.task import Question, Task, encode_prompt

ALL_TASKS = ("mt_bench", "humaneval", "gsm8k", "cnndm", "nq_rag", "wmt")
BASELINE = "ar"


@dataclass
class Plan:
    """What a run will do, resolved and validated before the model is loaded."""

    config: RunConfig
    methods: list[str]
    tasks: dict[str, Task]
    questions: dict[str, list[Question]]
    data_dir: Path | None
    shard: tuple[int, int] | None = None


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"2/4"`` -> (2, 4): this machine runs the 2nd of 4 deterministic slices (1-based)."""
    if not text:
        return None
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"--shard expects k/N (e.g. 1/4), got {text!r}") from None
    if not 1 <= k <= n:
        raise ConfigError(f"--shard {text}: need 1 <= k <= N")
    return k, n


def make_plan(config: RunConfig, shard: tuple[int, int] | None = None) -> Plan:
    """Resolve names (``all``, baseline first), load and slice questions; raises on any bad input."""
    if config.tie_threshold is None:
        config = dataclasses.replace(config, tie_threshold=default_tie_threshold(config.dtype))
    methods = [m.strip() for m in config.methods if m.strip()]
    for m in methods:
        METHODS.get(m)  # unknown names raise with a suggestion
        method_config(m, config.method_options.get(m))  # bad options raise now, before loading the model
    unknown_opts = sorted(set(config.method_options) - set(methods))
    if unknown_opts:
        raise ConfigError(f"--method-opt given for method(s) not in --methods: {', '.join(unknown_opts)}")
    methods = [BASELINE] + [m for m in dict.fromkeys(methods) if m != BASELINE]
    names: list[str] = []
    for t in config.tasks:
        names.extend(ALL_TASKS if t == "all" else [t.strip()])
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        raise ConfigError("--tasks is empty")
    tasks = {n: TASKS.get(n)() for n in names}
    data_dir = Path(config.data_dir) if config.data_dir else default_data_dir()
    if data_dir is not None and not data_dir.is_dir():
        raise ConfigError(f"--data-dir not found: {data_dir}")
    questions = {}
    index = 0
    for name, task in tasks.items():
        qs = task.load(data_dir)[: config.limit]
        if shard is not None:
            k, n = shard
            kept = []
            for q in qs:  # round-robin over (task, question) pairs; all methods of a pair stay together
                if index % n == k - 1:
                    kept.append(q)
                index += 1
            qs = kept
        questions[name] = qs
    return Plan(config, methods, tasks, questions, data_dir, shard)


def config_digest(plan: Plan) -> str:
    """Hash of everything that changes the work of a run (not its name or output folder)."""
    cfg = dataclasses.asdict(plan.config)
    for k in ("out_dir", "run_name", "allow_mismatch"):
        cfg.pop(k, None)
    cfg.update(methods=plan.methods, tasks=list(plan.tasks), shard=plan.shard)
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()[:8]


def run_dir_for(plan: Plan) -> Path:
    c = plan.config
    if c.run_name:
        name = c.run_name
    else:
        tasks = "all" if list(plan.tasks) == list(ALL_TASKS) else "-".join(plan.tasks)
        name = f"{'-'.join(plan.methods)}_{tasks}_l{c.limit or 'full'}_n{c.max_new_tokens}_{c.dtype}"
        if plan.shard:
            name += f"_shard{plan.shard[0]}of{plan.shard[1]}"
        name += f"_{config_digest(plan)}"
    return Path(c.out_dir) / name


class Runner:
    """Executes a ``Plan`` into ``run_dir`` (resuming when records exist)."""

    def __init__(self, plan: Plan, run_dir: Path, loaded: LoadedModel | None = None, progress: bool = True) -> None:
        self.plan = plan
        self.cfg = plan.config
        self.run_dir = run_dir
        self.loaded = loaded
        self.progress = progress
        self.ar_outputs: dict[tuple[str, str, int], list[int]] = {}
        self.mismatches = 0

    # -- setup -------------------------------------------------------------------------------
    def _check_existing_manifest(self, digest: str) -> None:
        if (self.run_dir / MANIFEST_FILE).is_file():
            old = read_manifest(self.run_dir)
            if old.get("config_digest") != digest:
                raise ConfigError(
                    f"{self.run_dir} holds a run with a different configuration; pick another --run-name "
                    "or delete that folder"
                )

    def _build_drafters(self) -> tuple[dict[tuple[str, str], Any], dict[str, Any], dict[str, Any]]:
        lm = self.loaded
        drafters: dict[tuple[str, str], Any] = {}
        configs: dict[str, Any] = {}
        artifacts: dict[str, Any] = {}
        for method in self.plan.methods:
            for task in self.plan.tasks:
                env = MethodEnv(lm.model, lm.tokenizer, lm.model_id, lm.device, self.plan.data_dir, cache_dir(), task)
                drafter, cfg = build_drafter(method, self.cfg.method_options.get(method), env)
                drafters[(method, task)] = drafter
                configs[method] = cfg
                if env.artifacts:
                    artifacts.setdefault(method, {})[task] = env.artifacts
        return drafters, configs, artifacts

    def _write_manifest(self, digest: str, configs: dict, artifacts: dict) -> None:
        lm = self.loaded
        manifest = build_manifest(
            run_name=self.run_dir.name,
            config_digest=digest,
            config=dataclasses.asdict(self.cfg) | {"methods": self.plan.methods, "tasks": list(self.plan.tasks)},
            shard=list(self.plan.shard) if self.plan.shard else None,
            model={"id": lm.model_id, "hash": lm.model_hash, "dtype": lm.dtype, "tf32": lm.tf32,
                   "device": str(lm.device), "class": type(lm.model).__name__},
            backend=self.engine.backend.describe(lm.model),
            method_configs=configs,
            artifacts=artifacts,
            data_dir=str(self.plan.data_dir) if self.plan.data_dir else None,
            questions={t: [q.question_id for q in qs] for t, qs in self.plan.questions.items()},
            task_versions={t: task.version for t, task in self.plan.tasks.items()},
            subtasks={t: task.subtask for t, task in self.plan.tasks.items()},
        )
        path = self.run_dir / MANIFEST_FILE
        if path.is_file():  # a resumed run keeps its first manifest and notes each resumption
            old = read_manifest(self.run_dir)
            old.setdefault("resumed", []).append({k: manifest[k] for k in ("timestamp", "git_commit", "hardware")})
            manifest = old
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=2, default=str))
        tmp.replace(path)

    # -- timing ------------------------------------------------------------------------------
    def _sync(self) -> None:
        if self.loaded.device.type == "cuda":
            torch.cuda.synchronize()

    def _timed(self, prompt: list[int], drafter: Any) -> tuple[Generation, float]:
        self._sync()
        t0 = time.perf_counter()
        gen = self.engine.generate(prompt, drafter, self.cfg.max_new_tokens)
        self._sync()
        return gen, time.perf_counter() - t0

    def _margin_at(self, prompt: list[int], ar_ids: list[int]):
        def margin(pos: int) -> float | None:
            ids = torch.tensor([prompt + ar_ids[:pos]], device=self.loaded.device)
            with torch.inference_mode():
                logits = self.loaded.model(input_ids=ids).logits[0, -1].float()
            top = torch.topk(logits, 2).values.tolist()
            return (top[0] - top[1]) / max(abs(top[0]), 1.0)

        return margin

    # -- main loop ---------------------------------------------------------------------------
    def prompt_for(self, task_name: str, q: Question, turn: int) -> list[int]:
        task = self.plan.tasks[task_name]
        answers = []
        for t in range(turn):
            ids = self.ar_outputs[(task_name, q.question_id, t + 1)]
            answers.append(self.loaded.tokenizer.decode(ids, skip_special_tokens=True))
        return encode_prompt(self.loaded.tokenizer, task.messages(q, turn, answers))

    def run(self) -> int:
        """Run all missing records; returns the number of lossless MISMATCH records (this run + resumed)."""
        digest = config_digest(self.plan)
        self._check_existing_manifest(digest)
        if self.loaded is None:
            self.loaded = load_model(self.cfg.model, self.cfg.dtype, self.cfg.device)
        lm = self.loaded
        self.engine = Engine(lm.model, stop_token_ids(lm.tokenizer, lm.model), self.cfg.backend)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        drafters, configs, artifacts = self._build_drafters()
        self._write_manifest(digest, configs, artifacts)

        existing = read_records(self.run_dir)
        done = {record_key(r) for r in existing}
        for r in existing:
            if r["method"] == BASELINE and r["repeat"] == 0:
                self.ar_outputs[(r["task"], str(r["question_id"]), r["turn"])] = r["output_ids"]
            self.mismatches += r.get("lossless_class") == MISMATCH

        jobs = [
            (t, q, turn, m, rep)
            for t, qs in self.plan.questions.items()
            for q in qs
            for turn in range(1, len(q.turns) + 1)
            for rep in range(self.cfg.repeats)
            for m in self.plan.methods
        ]
        todo = [j for j in jobs if (j[3], j[0], j[1].question_id, j[2], j[4]) not in done]
        if not todo:
            return self.mismatches
        self._warm_up(drafters, todo[0])
        bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc="bench", unit="gen",
                   disable=not self.progress, file=sys.stderr, dynamic_ncols=True)
        with RecordWriter(self.run_dir) as writer:
            for task_name, q, turn, method, rep in todo:
                bar.set_postfix_str(f"{task_name}/{q.question_id} t{turn} {method}", refresh=False)
                rec = self._one(drafters[(method, task_name)], task_name, q, turn, method, rep)
                writer.write(rec)
                bar.update(1)
        bar.close()
        return self.mismatches

    def _warm_up(self, drafters: dict, first_job: tuple) -> None:
        task_name, q, _turn, _m, _rep = first_job
        prompt = encode_prompt(self.loaded.tokenizer, self.plan.tasks[task_name].messages(q, 0, []))
        for _ in range(self.cfg.warmup):
            for method in self.plan.methods:
                self.engine.generate(prompt, drafters[(method, task_name)], self.cfg.max_new_tokens)

    def _one(self, drafter: Any, task_name: str, q: Question, turn: int, method: str, rep: int) -> dict:
        prompt = self.prompt_for(task_name, q, turn - 1)  # tokenisation outside the timed window
        gen, wall = self._timed(prompt, drafter)
        key = (task_name, q.question_id, turn)
        rec: dict[str, Any] = {
            "method": method,
            "task": task_name,
            "subtask": self.plan.tasks[task_name].subtask,
            "task_version": self.plan.tasks[task_name].version,
            "question_id": q.question_id,
            "category": q.category,
            "turn": turn,
            "repeat": rep,
            "prompt_tokens": len(prompt),
            "new_tokens": len(gen.output_ids),
            "wall_time_s": wall,
            "forward_passes": gen.forward_passes,
            "draft_time_s": sum(gen.draft_times_s),
            "verify_time_s": sum(gen.verify_times_s),
            "accept_lengths": gen.accept_lengths,
            "draft_sizes": gen.draft_sizes,
            "draft_times_s": [round(t, 7) for t in gen.draft_times_s],
            "output_ids": gen.output_ids,
        }
        if method == BASELINE:
            if rep == 0:
                self.ar_outputs[key] = gen.output_ids
            rec.update(lossless=None, lossless_class=None, first_divergence=None, ar_margin=None)
        else:
            ref = self.ar_outputs[key]
            result = classify(ref, gen.output_ids, self._margin_at(prompt, ref), self.cfg.tie_threshold)
            rec.update(result.as_record())
            self.mismatches += result.lossless_class == MISMATCH
        return rec
