"""The run manifest: hardware fingerprint, software versions, model, and the full configuration."""
from __future__ import annotations

import dataclasses
import datetime as dt
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from specbench.files.content_hash import verified_files
from specbench.files.jsonfile import write_json_atomic
from specbench.models.loading import vocab_size
from specbench.plugins.outside import loaded_plugins
from specbench.profiling.fingerprint import hardware
from specbench.results.run_folder import MANIFEST_FILE, PROFILE_FILE, UNRUNNABLE, read_manifest
from specbench.run.context import RunContext

# the manifest's own format; records carry theirs (``specbench.results.record.SCHEMA_VERSION``)
MANIFEST_SCHEMA_VERSION = 1


def versions() -> dict[str, str]:
    import transformers

    from specbench import __version__

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "specbench": __version__,
    }


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, timeout=10,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, timeout=10,
        ).stdout.strip()
        return (out.stdout.strip() + ("-dirty" if dirty else "")) or None
    except (OSError, subprocess.SubprocessError):
        return None


def build_manifest(device: torch.device | str | None = None, **fields: Any) -> dict[str, Any]:
    """A manifest dict: schema version, timestamp, hardware of ``device``, versions, git commit, command, plus ``fields``."""
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "hardware": hardware(device),
        "versions": versions(),
        "git_commit": git_commit(),
        **fields,
    }


def _model_shape(lm: Any) -> dict[str, Any] | None:
    """The target's shape (``profiling/model_shape.py``): a projection refuses profiles of another one."""
    from specbench.profiling.model_shape import shape_of_config

    config = getattr(lm.model, "config", None)
    return None if config is None else shape_of_config(config, lm.tokenizer)


def _host_seconds() -> float:
    """This host's model-free drafting figure (``profiling/host_factor.py``, about 0.1 s): a projection scales the
    run's PLD-like drafting seconds by another host's figure over this one."""
    from specbench.profiling.host_factor import measure_host_seconds

    return measure_host_seconds(repeats=7)


def write_run_manifest(ctx: RunContext, configs: dict, artifacts: dict, chat_template: dict[str, Any], *,
                       estimate: Any = None, machine: Any = None, engine: dict[str, Any] | None = None) -> None:
    """Write (or, resuming, note a resumption in) the run's ``manifest.json``: everything a reader checks
    records against and every reader labels the run with. ``estimate``: the up-front estimate (``estimate.py``;
    None when none was made); ``machine``: this invocation's ``MachineSession``; ``engine``: the engine under test
(``EngineSession.describe``: its binary's version and sha256, every server's flags), None without one."""
    lm = ctx.loaded
    manifest = build_manifest(
        device=lm.device,
        run_name=ctx.run_dir.name,
        config_digest=ctx.digest,
        config=dataclasses.asdict(ctx.cfg) | {"methods": ctx.plan.all_methods, "tasks": list(ctx.plan.tasks)},
        shard=list(ctx.plan.shard) if ctx.plan.shard else None,
        model={"id": lm.model_id, "hash": lm.model_hash, "dtype": lm.dtype, "tf32": lm.tf32,
               "device": str(lm.device), "class": type(lm.model).__name__, "vocab_size": vocab_size(lm.model),
               "verified": lm.verification, "shape": _model_shape(lm)},
        verified_files=verified_files(),
        backend=ctx.engine.backend.describe(lm.model),
        method_configs=configs,
        artifacts=artifacts,
        data_dir=str(ctx.plan.data_dir) if ctx.plan.data_dir else None,
        questions={t: [q.question_id for q in qs] for t, qs in ctx.plan.questions.items()},
        turns={t: [len(q.turns) for q in qs] for t, qs in ctx.plan.questions.items()},
        task_versions={t: task.version for t, task in ctx.plan.tasks.items()},
        subtasks={t: task.subtask for t, task in ctx.plan.tasks.items()},
        sampling=ctx.sampling.as_dict(),
        chat_template=chat_template,
        estimate=estimate.as_dict() if estimate else None,  # (estimate.py; seconds)
        host_s=_host_seconds(),
        drafter_threads=torch.get_num_threads(),  # (drafters run in torch: a projection prices them at this count)
        plugins=loaded_plugins(),  # outside methods and tasks: origin, source hash, names (plugins/outside.py)
    )
    lengths = {t: {"requested": task.asked_length or task.context_length, "prompt_tokens": task.prompt_tokens}
               for t, task in ctx.plan.tasks.items() if task.context_length is not None}
    if lengths:  # long-input tasks: the length asked for and the prompt length built (cut to fit the model)
        manifest["context_lengths"] = lengths
    if engine is not None:
        manifest["engine"] = engine
    if ctx.budgets.profile_path is not None:
        manifest["cost_profile"] = {"file": PROFILE_FILE, "cached": ctx.budgets.profile_path}
    path = ctx.run_dir / MANIFEST_FILE
    threads = manifest["backend"].get("threads") or torch.get_num_threads()  # (llama.cpp's, else torch's)
    if path.is_file():  # a resumed run keeps its first manifest and notes each resumption
        old = read_manifest(ctx.run_dir)
        keep = ("timestamp", "git_commit", "hardware", "verified_files", "estimate")
        old.setdefault("resumed", []).append({k: manifest[k] for k in keep} | {"model_verified": lm.verification}
                                             | ({"engine": engine} if engine is not None else {}))
        old.pop(UNRUNNABLE, None)  # (checked again as this run goes; noted again if it stops there again)
        manifest = old
    if machine is not None:  # this invocation's machine state; its end figures follow when the run ends
        machine.add_to(manifest, threads)
    write_json_atomic(path, manifest, indent=2)
