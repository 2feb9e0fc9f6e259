"""Golden files: AR reference outputs that every method must reproduce token for token (fp32).

``record`` runs the engine with no drafter on the first ``limit`` questions of some tasks and stores
prompt ids + output ids + the model hash + the config in a small JSON file. ``verify`` re-runs each
listed method on the stored prompts (same stop ids, same ``max_new_tokens``) and reports every entry
whose output differs from the golden AR output. Untimed: this is a correctness gate, not a benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from specbench.engine.loop import Engine
from specbench.files.jsonfile import load_json, save_json
from specbench.results.lossless import first_divergence
from specbench.results.record import accepted_tokens, drafted_tokens
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import build_drafter

GOLDEN_SCHEMA = 1


@dataclass(frozen=True)
class Prompt:
    """One golden prompt (token ids) and where it came from."""

    task: str
    question_id: str
    turn: int  # 1-based
    prompt_ids: list[int]


@dataclass
class VerifyResult:
    """Per method: entries that reproduced the golden output, and the failures (one line each)."""

    passed: dict[str, int] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)
    drafted: dict[str, int] = field(default_factory=dict)  # draft tokens proposed (tree nodes)
    accepted: dict[str, int] = field(default_factory=dict)  # draft tokens accepted

    @property
    def ok(self) -> bool:
        return not any(self.failures.values())


def record_outputs(
    engine: Engine,
    max_new_tokens: int,
    prompts: list[Prompt] | None = None,
    task_turns: Callable[[], list[tuple[str, str, int, Callable[[list[list[int]]], list[int]]]]] | None = None,
) -> list[dict[str, Any]]:
    """AR outputs for fixed ``prompts`` and/or multi-turn prompt builders ``(task, qid, n_turns, build)``.

    ``build(previous_ar_outputs)`` returns the prompt ids of the next turn given the earlier AR outputs.
    """
    entries = []
    for p in prompts or []:
        out = engine.generate(p.prompt_ids, None, max_new_tokens).output_ids
        entries.append({"task": p.task, "question_id": p.question_id, "turn": p.turn,
                        "prompt_ids": list(p.prompt_ids), "output_ids": out})
    for task, qid, n_turns, build in (task_turns() if task_turns else []):
        previous: list[list[int]] = []
        for turn in range(1, n_turns + 1):
            ids = build(previous)
            out = engine.generate(ids, None, max_new_tokens).output_ids
            previous.append(out)
            entries.append({"task": task, "question_id": qid, "turn": turn, "prompt_ids": ids, "output_ids": out})
    return entries


def task_prompt_builders(tokenizer: Any, tasks: list[str], limit: int, data_dir: Path | None) -> list[tuple]:
    """``(task, qid, n_turns, build)`` for the first ``limit`` questions of each registered task.

    Later turns are prompted with the AR answers of the earlier ones, as the runner does.
    """
    from specbench.plugins.registry import TASKS
    from specbench.prompts.task import encode_prompt

    out = []
    for name in tasks:
        task = TASKS.get(name)()
        for q in task.load(data_dir)[:limit]:
            def build(previous: list[list[int]], task: Any = task, q: Any = q) -> list[int]:
                answers = [tokenizer.decode(ids, skip_special_tokens=True) for ids in previous]
                return encode_prompt(tokenizer, task.messages(q, len(previous), answers))

            out.append((name, q.question_id, len(q.turns), build))
    return out


def recorded_on(device: Any) -> dict[str, Any]:
    """Where golden outputs were made: the device, its GPU/CPU name, compute capability and torch version.

    Another device runs other kernels, so a golden file is only a bit-exact reference there when the
    outputs happen to agree; ``verify`` says when the devices differ.
    """
    import torch

    from specbench.profiling.fingerprint import hardware

    hw = hardware(device)
    keys = ("device", "gpu", "gpu_uuid", "compute_capability", "cuda", "cpu")
    return {**{k: hw.get(k) for k in keys if hw.get(k) is not None}, "torch": torch.__version__}


def device_note(golden: dict[str, Any], device: Any) -> str | None:
    """A one-line warning when ``golden`` was recorded on another kind of device than ``device`` (None if same).

    >>> device_note({"recorded_on": {"device": "cuda:0", "gpu": "A100"}}, "cpu")
    'golden outputs were recorded on cuda:0 (A100), verifying on cpu: other kernels may round near-ties differently'
    """
    made = (golden.get("recorded_on") or {}).get("device")
    if made is None or str(made).split(":")[0] == str(device).split(":")[0]:
        return None
    gpu = (golden.get("recorded_on") or {}).get("gpu")
    return (f"golden outputs were recorded on {made}{f' ({gpu})' if gpu else ''}, verifying on {device}: "
            "other kernels may round near-ties differently")


def make_golden(entries: list[dict[str, Any]], model: dict[str, Any], config: dict[str, Any],
                stop_ids: set[int], task_versions: dict[str, str] | None = None,
                device: Any = None) -> dict[str, Any]:
    """The golden file's content; ``device`` (the model's) is recorded under ``recorded_on``."""
    golden = {"schema": GOLDEN_SCHEMA, "model": model, "config": config, "stop_ids": sorted(stop_ids),
              "task_versions": task_versions or {}, "entries": entries}
    if device is not None:
        golden["recorded_on"] = recorded_on(device)
    return golden


def save_golden(golden: dict[str, Any], path: str | Path) -> None:
    save_json(golden, path)


def load_golden(path: str | Path) -> dict[str, Any]:
    return load_json(path, GOLDEN_SCHEMA, "entries", "specbench golden file")


def verify_golden(
    golden: dict[str, Any],
    model: Any,
    env_for: Callable[[str], MethodEnv],
    methods: list[str],
    method_options: dict[str, dict[str, Any]] | None = None,
) -> VerifyResult:
    """Re-run ``methods`` on the golden prompts; ``env_for(task)`` gives the MethodEnv per task."""
    engine = Engine(model, set(golden["stop_ids"]))
    max_new = int(golden["config"]["max_new_tokens"])
    result = VerifyResult()
    for method in methods:
        result.passed[method] = result.drafted[method] = result.accepted[method] = 0
        fails = result.failures.setdefault(method, [])
        drafters: dict[str, Any] = {}
        for e in golden["entries"]:
            if e["task"] not in drafters:
                drafters[e["task"]], _ = build_drafter(method, (method_options or {}).get(method), env_for(e["task"]))
            gen = engine.generate(e["prompt_ids"], drafters[e["task"]], max_new)
            out = gen.output_ids
            result.drafted[method] += drafted_tokens(gen.draft_sizes)
            result.accepted[method] += accepted_tokens(gen.accept_lengths)
            if out == e["output_ids"]:
                result.passed[method] += 1
                continue
            pos = first_divergence(e["output_ids"], out)
            fails.append(f"{method} {e['task']}/{e['question_id']} turn {e['turn']}: diverges at token {pos} "
                         f"(golden {e['output_ids'][pos:pos + 5]} vs {out[pos:pos + 5]})")
    return result
