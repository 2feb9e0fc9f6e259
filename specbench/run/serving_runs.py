"""The engine-under-test part of a run: its session (servers up for the whole loop, always stopped), its rows at
concurrency 1 (the runner's loop calls ``one`` for them), its jobs above 1 (``pending`` / ``time_job``, after the
runner's own work, like batched jobs), and the counters every invocation reads, kept in ``engine/counters.json``.

A concurrency job is redone whole when any of its records is missing (its records are written together once it
finishes), as a batched job is. The counters file is a list, one entry per invocation (a resumed run adds its
own): each setting's counters since its warm-up, so the report can add them up.

Example, as the runner uses it::

    with ServingRuns(ctx, checked, encode) as servers:     # no-op for a run without --engine
        rec = servers.one(unit, q, "engine:ngram", prompt)
        for job in servers.pending(done):
            servers.time_job(job, done, writer)
"""
from __future__ import annotations

import datetime as dt
import json
from types import TracebackType
from typing import Any, Callable

from specbench.files.jsonfile import write_json_atomic
from specbench.results.record import Record, Unit
from specbench.run.context_fit import checked_fit
from specbench.run.serving_rows import SERVING_DIR, ConcurrencyJob, concurrency_jobs, serving_record, session_spec
from specbench.serving.session import EngineSession

COUNTERS_FILE = "counters.json"


class ServingRuns:
    """See the module docstring; ``checked(record, unit, prompt)`` gives a record its lossless verdict."""

    def __init__(self, ctx: Any, checked: Callable[[Record, Unit, list[int]], Record],
                 encode: Callable[[Any], list[int]]) -> None:
        self.ctx, self.checked, self.encode = ctx, checked, encode
        self.session: EngineSession | None = None

    def __enter__(self) -> "ServingRuns":
        if self.ctx.plan.engine_methods:
            self.session = EngineSession(session_spec(self.ctx, self.encode)).__enter__()
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.session is None:
            return
        try:
            self._save_counters()  # (servers that are gone give none: the counters are read where they answer)
        finally:
            self.session.close()

    def describe(self) -> dict[str, Any] | None:
        """The manifest's ``engine`` entry (None without an engine)."""
        return None if self.session is None else self.session.describe()

    def one(self, unit: Unit, q: Any, method: str, prompt: list[int]) -> Record:
        """One engine row's generation of ``unit`` at concurrency 1, checked against ``engine:off``."""
        checked_fit(self.ctx.run_dir, self.ctx.loaded.model, len(prompt), self.ctx.cfg.max_new_tokens, str(unit))
        reply = self.session.complete(method, prompt, self.ctx.cfg.max_new_tokens)
        return self.checked(serving_record(self.ctx, self.session, reply, method, unit, q, prompt), unit, prompt)

    def margin_at(self, label: str, prompt: list[int], output: list[int], position: int) -> float | None:
        return None if self.session is None else self.session.margin_at(label, prompt, output, position)

    def pending(self, done: set) -> list[ConcurrencyJob]:
        return [job for job in concurrency_jobs(self.ctx.plan) if any((job.method, u) not in done for u in job.units)]

    def time_job(self, job: ConcurrencyJob, done: set, writer: Any) -> int:
        """Send the job's prompts ``job.level`` at a time; write its missing records; returns how many."""
        prompts = [self.ctx.prompt_for(u, q) for u, q in zip(job.units, job.questions)]
        for u, p in zip(job.units, prompts):
            checked_fit(self.ctx.run_dir, self.ctx.loaded.model, len(p), self.ctx.cfg.max_new_tokens, str(u))
        results, wall = self.session.complete_many(job.method, prompts, self.ctx.cfg.max_new_tokens, job.level)
        written = 0
        for u, q, p, (reply, admitted, finished) in zip(job.units, job.questions, prompts, results):
            rec = serving_record(self.ctx, self.session, reply, job.method, u, q, p,
                                (admitted, finished, wall, len(job.units)))
            if (job.method, u) not in done:
                writer.write(self.checked(rec, u, p))
                written += 1
        return written

    def _save_counters(self) -> None:
        folder = self.ctx.run_dir / SERVING_DIR
        path = folder / COUNTERS_FILE
        try:
            entries = json.loads(path.read_text()) if path.is_file() else []
        except ValueError:
            entries = []
        entries.append({"ended": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                        "counters": self.session.finish()})
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, entries, indent=2)
