"""What a run will do, resolved before the model loads: methods, tasks, questions, shard, folder name.

``make_plan`` validates every name and option (raising ``ConfigError``/``UnknownNameError``), puts the
baseline first, expands ``--tasks all`` and each long-input task into one task per ``--context-length``
(``long_low@2k``, its prompts cut to fit the model's context), takes each task's ``--split``
(``specbench.prompts.task``: eval = all but the last ceil(10%) questions, dev = those, all), its first
``--limit`` questions, then the shard (a shard left without questions, or a ``--batch-size`` no task or shard
can fill, is refused: ``question_counts.py``); ``jobs``
lists the work in the order the runner times it; ``run_dir_for`` names the run folder from the config and
its digest (``_T1`` marks a sampling run, ``_dev`` / ``_all`` a split other than eval).

>>> parse_shard("2/4")
(2, 4)
>>> shard_slice(["a", "b", "c", "d", "e"], (2, 2))
['b', 'd']
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence, TypeVar

from specbench.catalog import ALL_TASKS, BASELINE, is_engine_row
from specbench.config.context_length import DEFAULT_LENGTHS, MIN_LENGTH, length_label, parse_length
from specbench.config.method_labels import expand_budget, label_options, split_label
from specbench.config.run_config import MAX_NAME, RunConfig
from specbench.errors import ConfigError
from specbench.files.safe_names import check_label
from specbench.models.context import declared_context
from specbench.paths import resolve_data_dir
from specbench.plugins.registry import METHODS, make_task
from specbench.prompts.task import DEFAULT_SPLIT, Question, Task
from specbench.prompts.templates import check_template_name, template_file_digest
from specbench.results.lossless import default_tie_threshold
from specbench.results.record import Unit
from specbench.run.guards import fitted_length
from specbench.run.methods_factory import method_config
from specbench.run.question_counts import check_batch_sizes, check_shards_filled
from specbench.serving.settings import engine_labels

T = TypeVar("T")


@dataclass
class Plan:
    """What a run will do, resolved and validated before the model is loaded."""

    config: RunConfig
    methods: list[str]
    tasks: dict[str, Task]
    questions: dict[str, list[Question]]
    data_dir: Path | None
    shard: tuple[int, int] | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # per method label, its resolved options
    engine_methods: list[str] = field(default_factory=list)  # an engine under test's rows, engine:off first

    @property
    def all_methods(self) -> list[str]:
        """Every row of the run: specbench's own methods (``ar`` first), then the engine's (``engine:off`` first)."""
        return self.methods + self.engine_methods

    def options_of(self, label: str) -> dict[str, Any]:
        """The options of method ``label``: its method's overlaid with its variant's (``methods_factory``)."""
        return self.options.get(label, {})

    def jobs(self) -> Iterator[tuple[Unit, Question, str]]:
        """(unit, question, method) at batch size 1: per question and turn every method (baseline first) and
        repeat, so machine drift hits all methods alike and turn 2 finds the baseline's turn-1 answer. (With
        ``--batch-size`` not listing 1, only the baseline: the lossless reference; ``batch_jobs.py``.) An engine's
        rows follow specbench's own, ``engine:off`` first (only it where ``--concurrency`` does not list 1).
        """
        methods = self.methods if 1 in self.config.batch_size else [BASELINE]
        methods = methods + (self.engine_methods if 1 in self.config.concurrency else self.engine_methods[:1])
        for task, qs in self.questions.items():
            for q in qs:
                for turn in range(1, len(q.turns) + 1):
                    for rep in range(self.config.repeats):
                        for method in methods:
                            yield Unit(task, q.question_id, turn, rep), q, method


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


def shard_slice(items: Sequence[T], shard: tuple[int, int], start: int = 0) -> list[T]:
    """Round-robin slice ``k`` of ``n`` of ``items``, counting positions from ``start``."""
    k, n = shard
    return [x for i, x in enumerate(items, start) if i % n == k - 1]


def _method_names(config: RunConfig) -> tuple[list[str], list[str]]:
    """The run's method labels, baseline first (``NAME@VARIANT`` labels and ``--budget`` expanded), and an engine's
    rows (``engine:off`` first)."""
    given = [check_label(m.strip(), "--methods") for m in config.methods if m.strip()]  # (labels reach folder names)
    engine = engine_labels(config, [m for m in given if is_engine_row(m)])
    methods = expand_budget([m for m in given if not is_engine_row(m)], config.budget)
    for m in methods:
        METHODS.get(split_label(m)[0])  # unknown names raise with a suggestion
        method_config(m, label_options(m, config.method_options))  # bad options raise now, before loading the model
    known = set(methods) | {split_label(m)[0] for m in methods} | set(engine) | {split_label(m)[0] for m in engine}
    unknown_opts = sorted(set(config.method_options) - known)
    if unknown_opts:
        raise ConfigError(f"--method-opt given for method(s) not in --methods: {', '.join(unknown_opts)}")
    return [BASELINE] + [m for m in dict.fromkeys(methods) if m != BASELINE], engine


def _task_names(config: RunConfig) -> list[str]:
    names: list[str] = []
    for t in config.tasks:
        names.extend(ALL_TASKS if t == "all" else [t.strip()])
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        raise ConfigError("--tasks is empty")
    return names


def shown_length(requested: int, limit: int | None, fitted: int) -> int:
    """The length a long-input task instance is named and labelled by: the one asked for, or, when that exceeds the
    model's whole context, the one built (``--context-length 1000000`` on an 8192-token model with
    ``--max-new-tokens 4`` gives ``long_low@8060``, column ``Long-low 8060``: no report shows a length no prompt
    had). A length within the context keeps its name though its prompts are cut by the generation and the draft
    headroom (8k on that model: ``long_low@8k`` of 8060 tokens; the prompt-tokens column says so).

    >>> shown_length(1_000_000, 8192, 8060), shown_length(8192, 8192, 8060), shown_length(2048, None, 2048)
    (8060, 8192, 2048)
    """
    return fitted if limit is not None and requested > limit else requested


def _make_tasks(config: RunConfig) -> dict[str, Task]:
    """The run's tasks by name; a long-input task once per input length, as ``NAME@LENGTH`` (``long_low@2k``,
    or just the length a name already gives), its prompts as long as the model's context allows."""
    tasks: dict[str, Task] = {}
    model_context = functools.cache(lambda: declared_context(config.model))  # read once, if a long task needs it
    for name in _task_names(config):
        base_name, at, given = name.partition("@")
        task = make_task(base_name if at and ":" not in name else name)
        if not task.takes_context_length:
            if at and ":" not in name:
                raise ConfigError(f"--tasks {name}: task {base_name} has no input length")
            tasks[name] = task
            continue
        for length in (parse_length(given),) if at else config.context_length or DEFAULT_LENGTHS:
            fitted = fitted_length(length, model_context(), config.max_new_tokens)
            if fitted < MIN_LENGTH:
                raise ConfigError(f"--context-length {length_label(length)}: the model's context ({model_context()} "
                                  f"tokens) leaves {fitted} tokens for a prompt after --max-new-tokens and the draft "
                                  "headroom")
            shown = shown_length(length, model_context(), fitted)
            instance = task.at_context_length(shown, fitted)
            instance.asked_length = length  # (the manifest and the report say "asked -> built")
            tasks[f"{base_name}@{length_label(shown)}"] = instance
    if config.context_length and not any(t.takes_context_length for t in tasks.values()):
        raise ConfigError("--context-length applies to long-input tasks (long_low, long_mixed, long_high); "
                          "none is in --tasks")
    return tasks


def make_plan(config: RunConfig, shard: tuple[int, int] | None = None) -> Plan:
    """Resolve names (``all``, baseline first), load and slice questions; raises on any bad input."""
    if config.tie_threshold is None:
        config = dataclasses.replace(config, tie_threshold=default_tie_threshold(config.dtype))
    check_template_name(config.chat_template)
    methods, engine = _method_names(config)
    tasks = _make_tasks(config)
    data_dir = resolve_data_dir(config.data_dir)
    if data_dir is not None and not data_dir.is_dir():
        raise ConfigError(f"--data-dir not found: {data_dir}")
    questions, counts = {}, {}
    index = 0  # shards slice (task, question) pairs round-robin; all methods of a pair stay together
    for name, task in tasks.items():
        loaded = task.load(data_dir)
        dups = sorted(i for i, n in Counter(q.question_id for q in loaded).items() if n > 1)  # over every split
        if dups:
            raise ConfigError(f"task {name}: duplicate question id(s) {', '.join(dups[:5])} in its data; each "
                              "question needs its own id")
        qs = task.split(loaded, config.split)[: config.limit]
        questions[name], counts[name] = shard_slice(qs, shard, index) if shard else qs, len(qs)
        index += len(qs)
    check_shards_filled(index, shard)  # (the same verdict in every shard: launch checks shard 1 for all)
    check_batch_sizes(config.batch_size, counts, shard)
    options = {m: label_options(m, config.method_options) for m in methods + engine}
    return Plan(config, methods, tasks, questions, data_dir, shard, options, engine)


def config_digest(plan: Plan) -> str:
    """Hash of everything that changes the work of a run (not its name or output folder)."""
    cfg = dataclasses.asdict(plan.config)
    for k in ("out_dir", "run_name", "allow_mismatch", "verify"):  # (verify: how inputs are checked, not the work)
        cfg.pop(k, None)
    if cfg.get("budget") == "default":  # runs from before --budget existed keep their digests
        cfg.pop("budget")
    if plan.config.sampling.greedy:  # greedy runs keep the digests they had before sampling existed
        for k in ("temperature", "top_p", "top_k"):
            cfg.pop(k, None)
    if plan.config.split == DEFAULT_SPLIT:  # eval runs keep the digests they had before splits existed
        cfg.pop("split", None)
    if cfg.get("chat_template") == "auto":  # runs from before templates existed keep their digests
        cfg.pop("chat_template")
    elif template_file_digest(plan.config.chat_template):  # a template file: its content, not only its name
        cfg["chat_template_sha256"] = template_file_digest(plan.config.chat_template)
    if cfg.get("preset") is None:  # (the preset's values are in the other fields; its name only labels them)
        cfg.pop("preset", None)
    if not cfg.get("context_length"):  # runs from before input lengths existed keep their digests
        cfg.pop("context_length", None)
    if cfg.get("threads") is None:  # runs from before --threads existed keep their digests
        cfg.pop("threads", None)
    if tuple(cfg.get("batch_size") or (1,)) == (1,) and not cfg.get("refill"):  # unbatched runs keep their digests
        cfg.pop("batch_size", None)
        cfg.pop("refill", None)
    if cfg.get("engine") is None:  # runs without an engine under test keep their digests
        for k in ("engine", "engine_options", "concurrency"):
            cfg.pop(k, None)
    cfg.update(methods=plan.all_methods, tasks=list(plan.tasks), shard=plan.shard)
    # jsonl:/hf: tasks and the built ones (long-input, SPEED-Bench): their content hash
    sourced = {n: t.version for n, t in plan.tasks.items() if ":" in n or t.content_versioned}
    if sourced:  # (only then, so the digests of runs of built-in tasks stay what they were)
        cfg["task_content"] = sourced
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()[:8]


def run_dir_for(plan: Plan) -> Path:
    """``out_dir/run_name``, or a name made of methods, tasks, limit, tokens, dtype, shard and digest."""
    c = plan.config
    if c.run_name:
        name = c.run_name
    else:
        tasks = "all" if list(plan.tasks) == list(ALL_TASKS) else "-".join(t.slug for t in plan.tasks.values())
        name = f"{'-'.join(plan.all_methods).replace(':', '-')}_{tasks}_l{c.limit or 'full'}_n{c.max_new_tokens}_{c.dtype}"
        if not c.sampling.greedy:
            name += f"_T{c.temperature:g}"
        if c.split != DEFAULT_SPLIT:
            name += f"_{c.split}"
        if c.batch_size != (1,):
            name += f"_b{'-'.join(map(str, c.batch_size))}" + ("_refill" if c.refill else "")
        if c.concurrency != (1,):
            name += f"_c{'-'.join(map(str, c.concurrency))}"
        if plan.shard:
            name += f"_shard{plan.shard[0]}of{plan.shard[1]}"
        # many methods or custom tasks can make it longer than a file name may be: the digest keeps it unique
        name = f"{name[: MAX_NAME - 9]}_{config_digest(plan)}"
    return Path(c.out_dir) / name  # (no '/' in it: labels are checked, task slugs are single names)
