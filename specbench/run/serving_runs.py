"""The serving part of a run (an engine under test, ``--engine``; ``specbench.engine`` is specbench's own decoder):
its session (servers up for the whole loop, always stopped), its rows at concurrency 1 (the runner's loop calls
``one`` for them), its jobs above 1 (``pending`` / ``time_job``, after the runner's own work, like batched jobs),
and the counters every invocation reads, kept in ``engine/counters.json``. Its prompts and records go through the
runner's driver (``driver.py``); its timing is its requests' (``serving/session.py``).

A concurrency job is redone whole when any of its records is missing (its records are written together once it
finishes), as a batched job is. The counters file is a list, one entry per invocation (a resumed run adds its
own): each setting's counters since its warm-up, so the report can add them up.

Example, as the runner uses it::

    with ServingRuns(ctx, encode) as servers:     # no-op for a run without --engine
        rec = servers.one(row)                    # row: driver.job_rows of "engine:ngram" on one unit
        for job in servers.pending(done):
            servers.time_job(job, done, writer)
"""
from __future__ import annotations

import datetime as dt
import json
from types import TracebackType
from typing import Any, Callable

from specbench.files.jsonfile import write_json_atomic
from specbench.results.record import Record
from specbench.run.context import Row
from specbench.run.driver import job_rows, write_missing
from specbench.run.serving_rows import SERVING_DIR, ConcurrencyJob, concurrency_jobs, serving_record, session_spec
from specbench.serving.session import EngineSession

COUNTERS_FILE = "counters.json"


class ServingRuns:
    """See the module docstring; ``encode(conversation)``: the run's template's prompt ids (the servers' warm-up)."""

    def __init__(self, ctx: Any, encode: Callable[[Any], list[int]]) -> None:
        self.ctx, self.encode = ctx, encode
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

    def one(self, row: Row) -> Record:
        """One engine row's generation of ``row`` at concurrency 1, checked against ``engine:off``."""
        reply = self.session.complete(row.method, row.prompt, self.ctx.cfg.max_new_tokens)
        return self.ctx.checked(serving_record(self.ctx, self.session, reply, row), row.unit, row.prompt)

    def margin_at(self, label: str, prompt: list[int], output: list[int], position: int) -> float | None:
        return None if self.session is None else self.session.margin_at(label, prompt, output, position)

    def pending(self, done: set) -> list[ConcurrencyJob]:
        return [job for job in concurrency_jobs(self.ctx.plan) if any((job.method, u) not in done for u in job.units)]

    def time_job(self, job: ConcurrencyJob, done: set, writer: Any) -> int:
        """Send the job's prompts ``job.level`` at a time; write its missing records; returns how many."""
        rows = job_rows(self.ctx, job)
        results, wall = self.session.complete_many(job.method, [r.prompt for r in rows], self.ctx.cfg.max_new_tokens,
                                                   job.level)

        def record_of(i: int) -> Record:
            reply, admitted, finished = results[i]
            return serving_record(self.ctx, self.session, reply, rows[i], (admitted, finished, wall, len(rows)))

        return write_missing(self.ctx, rows, record_of, done, writer)

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
