"""A run's engines under test: one per speculation setting (``engine:off`` first), started (llama-server) or
reached (an OpenAI-compatible server), warmed up, their counters read before the first timed request and after the
last, and every server specbench started stopped at the end, whatever ended the run.

Each setting is its own server because llama.cpp and vLLM fix speculation when a server starts; all of them are
up at once, so the runner can time every row of a question before the next question, as it does its own methods
(on a CPU the servers share the model file's pages; a GPU holds one copy per server).

Example::

    with EngineSession(spec) as engines:             # servers ready and warmed up, counters read
        reply = engines.complete("engine:ngram", prompt_ids, 128)
        replies = engines.complete_many("engine:ngram", [p1, p2, p3], concurrency=4)
        engines.finish()                             # counters after - before, per setting
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from specbench.catalog import ENGINE_BASELINE
from specbench.serving.llama_server import LlamaServer, binary_facts, find_binary
from specbench.serving.openai_api import OpenAIEngine
from specbench.serving.process import EngineError
from specbench.serving.prometheus import SpecCounters
from specbench.serving.reply import EngineReply
from specbench.serving.settings import FLAGS_KEY, LLAMA_SERVER, URL_KEY, setting_flags

WARMUP_TOKENS = 16
READY_TIMEOUT_S, REQUEST_TIMEOUT_S = 300.0, 600.0  # (a request's: from sending it to the end of its answer)


@dataclass
class SessionSpec:
    """What a session starts: the engine kind and its settings (label -> options, ``engine:off`` first), the
    model file and draft files (llama-server), the baseline URL (openai), and the servers' resources."""

    kind: str
    settings: dict[str, dict[str, str]]
    log_dir: Path
    vocab: int | None = None
    url: str | None = None
    model_file: Path | None = None
    draft_files: dict[str, Path] = field(default_factory=dict)
    threads: int = 2
    ctx: int = 4096  # per slot
    parallel: int = 1
    engine_options: dict[str, str] = field(default_factory=dict)
    base_flags: list[str] = field(default_factory=list)  # every server's, before its setting's (which may override)
    warmup_prompt: list[int] = field(default_factory=list)
    warmups: int = 1

    def option(self, key: str, default: float) -> float:
        try:
            return float(self.engine_options.get(key, default))
        except ValueError:
            raise EngineError(f"--engine-opt {key}={self.engine_options[key]!r} is not a number") from None


class EngineSession:
    """The engines of one run invocation (a context manager: see the module docstring)."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec
        self.engines: dict[str, Any] = {}
        self.before: dict[str, SpecCounters | None] = {}
        self.facts: dict[str, Any] = {}

    def _make(self, label: str, options: dict[str, str]) -> Any:
        s = self.spec
        timeout = s.option("request_timeout_s", REQUEST_TIMEOUT_S)
        if s.kind != LLAMA_SERVER:
            url = s.url if label == ENGINE_BASELINE else options[URL_KEY]
            return OpenAIEngine(label, url, vocab=s.vocab, model=options.get("model"), request_timeout_s=timeout)
        flags = s.base_flags + setting_flags(s.kind, label, options)
        if label in s.draft_files:
            flags += ["-md", str(s.draft_files[label])]
        extra = s.engine_options.get(FLAGS_KEY)
        flags += extra.split() if extra else []
        return LlamaServer(label, Path(self.facts["binary"]), s.model_file, flags, s.log_dir, threads=s.threads,
                           ctx=s.ctx, parallel=s.parallel, vocab=s.vocab,
                           ready_timeout_s=s.option("ready_timeout_s", READY_TIMEOUT_S), request_timeout_s=timeout)

    def __enter__(self) -> "EngineSession":
        try:
            if self.spec.kind == LLAMA_SERVER:
                self.facts = binary_facts(find_binary())
            for label, options in self.spec.settings.items():
                engine = self.engines[label] = self._make(label, options)
                engine.start()
            for label, engine in self.engines.items():
                for _ in range(self.spec.warmups if self.spec.warmup_prompt else 0):
                    engine.complete(self.spec.warmup_prompt, WARMUP_TOKENS)
                self.before[label] = engine.counters()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        for engine in self.engines.values():
            engine.stop()

    def complete(self, label: str, prompt: list[int], max_new_tokens: int) -> EngineReply:
        return self.engines[label].complete(prompt, max_new_tokens)

    def complete_many(self, label: str, prompts: list[list[int]], max_new_tokens: int,
                      concurrency: int) -> tuple[list[tuple[EngineReply, float, float]], float]:
        """Every prompt, ``concurrency`` requests in flight at once (a finished one's place goes to the next at
        once): ([(reply, admitted_s, finished_s)], the whole job's seconds), times from the job's start."""
        engine, t0 = self.engines[label], time.perf_counter()

        def one(prompt: list[int]) -> tuple[EngineReply, float, float]:
            admitted = time.perf_counter() - t0
            reply = engine.complete(prompt, max_new_tokens)
            return reply, admitted, time.perf_counter() - t0

        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            results = list(pool.map(one, prompts))
        return results, time.perf_counter() - t0

    def margin_at(self, label: str, prompt: list[int], output: list[int], position: int) -> float | None:
        return self.engines[label].margin_at(prompt, output, position)

    def peak_rss_bytes(self, label: str) -> int | None:
        return self.engines[label].peak_rss_bytes()

    def finish(self) -> dict[str, Any]:
        """Each setting's counters since the warm-up (``SpecCounters.minus``), as JSON; None where none."""
        out = {}
        for label, engine in self.engines.items():
            after = engine.counters()
            out[label] = None if after is None else after.minus(self.before.get(label)).to_json()
        return out

    def describe(self) -> dict[str, Any]:
        """The manifest's ``engine``: kind, the binary's facts, and per setting how it was started or reached."""
        out: dict[str, Any] = {"kind": self.spec.kind, **self.facts, "threads": self.spec.threads,
                               "parallel": self.spec.parallel, "ctx_per_slot": self.spec.ctx,
                               "settings": {label: e.describe() for label, e in self.engines.items()}}
        if self.spec.kind == LLAMA_SERVER and self.engines:
            out["server"] = next(iter(self.engines.values())).props()
        return out
