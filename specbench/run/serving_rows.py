"""An engine under test inside a run: its session built from the run (``session_spec``), its records made like the
runner's own (``serving_record``), and its work at concurrency levels above 1 (``ConcurrencyJob``).

An engine row's record is the runner's record of the reply's ``Generation`` (``serving/reply.py``): its passes
rebuilt from the engine's counters, its time to first token and steps from the arrival times, the engine's own
per-request figures in ``drafter_state``, its peak memory the server's (``engine_rss_peak_since_start``: the
server process's high-water mark, never reset). At a concurrency level C above 1 (``--concurrency 1,4``) every
question of a task and turn is sent with C requests in flight at once, a finished request's place taken by the
next at once; the records are those of a batch of size C (``Unit.batch`` = C, ``batch_wall_time_s`` the job's time,
``wall_time_s`` an equal share of it, ``admitted_s`` / ``finished_s`` from its start), so every batch table, the
speedup per level against ``engine:off`` at the same level, TTFT and TPOT per request, reads them unchanged.

Example: ``--concurrency 1,4`` on 5 GSM8K questions: at level 1 the runner's usual loop; then for level 4, per
engine row (``engine:off`` first), the 5 prompts with 4 in flight.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from specbench.config.engine_choice import LLAMA_SERVER, parse_engine
from specbench.errors import ConfigError
from specbench.models.context import config_context
from specbench.prompts.task import Question
from specbench.prompts.templates import PROBE
from specbench.results.record import Record, Unit
from specbench.paths import cache_dir
from specbench.run.context import Row
from specbench.run.method_env import MethodEnv
from specbench.engine.backends.llamacpp.gguf_files import QUANTISED, gguf_model
from specbench.serving.draft_gguf import sps_draft_gguf
from specbench.serving.reply import EngineReply
from specbench.serving.session import SessionSpec
from specbench.serving.settings import SPS_DRAFT, draft_model

SERVING_DIR = "engine"  # the run folder's: the servers' logs and the counters file
MEMORY_KIND = "engine_rss_peak_since_start"
CTX_MARGIN, CTX_ROUND = 128, 256
# the run's model at full precision (F32 / F16 / BF16 weights): an F32 KV cache and no flash attention (llama.cpp's CPU
# flash attention rounds to F16), as the llamacpp backend runs it, so the engine's rows are checked at the run's
# precision; llama.cpp's defaults (F16 KV cache, flash attention auto) flip near-ties between batch shapes
FULL_PRECISION_FLAGS = ["-ctk", "f32", "-ctv", "f32", "-fa", "off"]


@dataclass(frozen=True)
class ConcurrencyJob:
    """One engine row sending ``units`` (one task, one turn) with ``level`` requests in flight at once."""

    method: str
    level: int
    units: tuple[Unit, ...]
    questions: tuple[Question, ...]


def concurrency_jobs(plan: Any) -> Iterator[ConcurrencyJob]:
    """Every engine job above concurrency 1, in the order the runner times them (``engine:off`` first per group)."""
    cfg = plan.config
    for level in (c for c in cfg.concurrency if c > 1):
        for task, qs in plan.questions.items():
            for turn in range(1, max((len(q.turns) for q in qs), default=0) + 1):
                members = tuple(q for q in qs if len(q.turns) >= turn)
                for rep in range(cfg.repeats):
                    units = tuple(Unit(task, q.question_id, turn, rep, level) for q in members)
                    for method in plan.engine_methods:
                        yield ConcurrencyJob(method, level, units, members)


def _threads(cfg: Any) -> int:
    if cfg.threads:
        return int(cfg.threads)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _draft_files(plan: Any, target_gguf: Path | None, ctx: Any) -> dict[str, Path]:
    out = {}
    for label in plan.engine_methods:
        given = draft_model(label, {k: str(v) for k, v in plan.options_of(label).items()})
        if given is None:
            continue
        if given == SPS_DRAFT:  # the SpS distilled draft (trained on first use, as sps does), written as a GGUF
            env = MethodEnv.for_task(ctx.loaded, plan.data_dir, cache_dir(), None, plan.config.split)
            out[label] = sps_draft_gguf(env, target_gguf)
            continue
        path = Path(given).expanduser()
        if not path.is_file() or path.suffix != ".gguf":
            raise ConfigError(f"{label}.model: {given!r} is not a .gguf file")
        out[label] = path
    return out


def session_spec(ctx: Any, template_encode: Any) -> SessionSpec:
    """The ``SessionSpec`` of ``ctx``'s run (``RunContext``): its engine, settings with their options, the GGUF the
    server runs (llama-server: the run's model in the run's dtype, made once like the llama.cpp backend's and run at
    its precision, ``FULL_PRECISION_FLAGS``; or the file ``--engine-opt model=PATH.gguf`` names, at llama.cpp's
    defaults), the context per slot (the run's longest, rounded up), one slot per
    request in flight."""
    plan, cfg = ctx.plan, ctx.cfg
    kind, url = parse_engine(cfg.engine)
    model_file, base_flags = None, []
    if kind == LLAMA_SERVER and cfg.engine_options.get("model"):  # the user's own GGUF (weights then may differ)
        model_file = Path(cfg.engine_options["model"]).expanduser()
        if not model_file.is_file():
            raise ConfigError(f"--engine-opt model={cfg.engine_options['model']}: no such file")
    elif kind == LLAMA_SERVER:
        gguf = getattr(ctx.loaded, "gguf", None)
        if gguf is None:
            gguf = gguf_model(cfg.model, cfg.dtype, _threads(cfg))
        model_file = gguf.path
        base_flags = [] if gguf.dtype in QUANTISED else list(FULL_PRECISION_FLAGS)
    limit = config_context(getattr(ctx.loaded.model, "config", None)) or 1 << 20
    per_slot = min(limit, math.ceil((ctx.longest_context + CTX_MARGIN) / CTX_ROUND) * CTX_ROUND)
    vocab = getattr(getattr(ctx.loaded.model, "config", None), "vocab_size", None)
    return SessionSpec(kind, {m: {k: str(v) for k, v in plan.options_of(m).items()} for m in plan.engine_methods},
                       ctx.run_dir / SERVING_DIR, vocab=vocab, url=url, model_file=model_file,
                       draft_files=_draft_files(plan, model_file, ctx) if kind == LLAMA_SERVER else {},
                       threads=_threads(cfg), ctx=per_slot, parallel=max(cfg.concurrency),
                       engine_options=dict(cfg.engine_options), base_flags=base_flags,
                       warmup_prompt=template_encode(PROBE), warmups=cfg.warmup)


def serving_record(ctx: Any, session: Any, reply: EngineReply, row: Row,
                   job: tuple[float, float, float, int] | None = None) -> Record:
    """The record of one engine reply to ``row`` (before its lossless verdict); ``job``: (admitted, finished, the
    job's seconds, its requests) of a request sent at a concurrency level above 1."""
    gen = reply.as_generation()
    wall, batch_wall = reply.wall_s, None
    if job is not None:
        gen.admitted_s, gen.finished_s, batch_wall, n = job
        wall = batch_wall / n
    memory = (MEMORY_KIND, session.peak_rss_bytes(row.method))
    return ctx.record(gen, row, wall, memory, batch_wall=batch_wall)
