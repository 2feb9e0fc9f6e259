"""The runner's side of the up-front estimate (``estimate.py``): read before the first build and generation,
from what the run knows then: the generations left (a resumed run skips its records), each task's typical
prompt length, T(n) and the first-use builds its methods report (``register_first_use_build``).

T(n) comes from the run's own cost profile (a resumed ``budget=auto`` run), else this machine's cached one,
else from a few forwards timed now (``PROBE_SIZES``: well under a second for a small model on a CPU); a
``budget=auto`` run without a profile will measure one, which the estimate counts as a build.

Example: the main entry's command (``run_bench.py --methods rest,dresd,redrafter``) from an empty cache on
the embedded model, docs/measurements.md's quiet T(n) in place of the timed forwards::

    [specbench] estimate: 2316 generations (+24 warm-up), about 4 h here (3 h to 6 h 30 min; T(n) from 8 timed forwards)
    [specbench]   first: ~4 min to build rest's datastore x3, ~2 min to build dresd's datastore x3, ~4 min to train redrafter's quick recipe
    [specbench]   --limit 3 would take about 11 min (+ the same first-use builds)
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path
from typing import Any

from specbench.catalog import BASELINE
from specbench.config.method_labels import split_label
from specbench.errors import ConfigError
from specbench.models.context import config_context
from specbench.paths import cache_dir
from specbench.plugins.registry import FIRST_USE_BUILDS
from specbench.profiling import measure
from specbench.profiling.cost_profile import REPEATS, SIZES, cached_profile_path, contexts_for, cost_function
from specbench.profiling.profile import load_profile
from specbench.results.record import Unit
from specbench.results.run_folder import MANIFEST_FILE, PROFILE_FILE, read_manifest
from specbench.results.validation import read_validated_records
from specbench.run.batch_jobs import batch_jobs
from specbench.run.batch_runner import WARMUP_TOKENS
from specbench.run.context import RunContext
from specbench.run.drafter_state import first_pending
from specbench.run.serving_rows import concurrency_jobs
from specbench.run.estimate import (Cost, PendingBuild, RunEstimate, Work, estimate_work, format_estimate, priced,
                                    unique_builds)
from specbench.run.method_env import MethodEnv
from specbench.run.methods_factory import budget_priced, method_config

# forwards timed when no profile exists: T(1), and T(64) for prefills (a prefill's cost per token is about
# a wide forward's); after one untimed round, the median of 3 (about 1 s for the embedded model on 2 cores)
PROBE_SIZES, PROBE_REPEATS = (1, 64), 3
PROMPT_SAMPLE = 16  # turn-1 prompts tokenised per task for its typical prompt length
LIMIT_HINT = 3  # the smaller run the estimate offers (--limit 3) when the run has more questions per task
PROFILE_WARMUP = 2  # untimed rounds of every profile measurement (``measure_forward_curve``'s default)


def announce_estimate(ctx: RunContext) -> RunEstimate | None:
    """Print the estimate of ``ctx``'s run to stderr and return it (None when
    nothing is left to run)."""
    est = estimate_run(ctx)
    for line in format_estimate(est) if est else []:
        print(line, file=sys.stderr)
    return est


def estimate_run(ctx: RunContext) -> RunEstimate | None:
    """The estimate of what ``ctx``'s run has left to do (see the module docstring)."""
    plan = ctx.plan
    prompts = typical_prompts(ctx)
    work, warmups = plan_work(plan, done_keys(ctx.run_dir), prompts)
    records = sum(w.records for w in work)
    if not records:
        return None
    cost, source, profile_missing = run_cost(ctx, prompts)
    builds = first_use_builds(ctx)
    if profile_missing and any(budget_priced(m, plan.options_of(m)) for m in plan.methods):
        builds.append(profile_build(ctx, cost))
    limited = None
    if any(len(qs) > LIMIT_HINT for qs in plan.questions.values()):
        small = dataclasses.replace(plan, questions={t: qs[:LIMIT_HINT] for t, qs in plan.questions.items()})
        small_work, small_warmups = plan_work(small, set(), prompts)
        limited = (LIMIT_HINT, estimate_work(small_work + small_warmups, cost)[1])
    return RunEstimate(records, len(warmups), estimate_work(work + warmups, cost),
                       tuple(priced(b, cost) for b in unique_builds(builds)), limited, source,
                       estimate_work(warmups, cost)[1])


def plan_work(plan: Any, done: set, prompts: dict[str, int]) -> tuple[list[Work], list[Work]]:
    """(the timed generations of ``plan`` not in ``done``, the warm-up ones before them), as the runner runs
    them; a later turn's prompt also holds the earlier turns' answers (their own text and markup, a few
    dozen tokens, left out)."""
    new = plan.config.max_new_tokens

    def prompt(unit: Unit) -> int:
        return prompts[unit.task] + (unit.turn - 1) * new

    todo = [(u, q, m) for u, q, m in plan.jobs() if (m, u) not in done]
    work = [Work(m == BASELINE or m not in plan.methods, prompt(u), new) for u, _, m in todo]  # (an engine's: as AR)
    warm = [Work(m == BASELINE, prompts[task], new, records=0)
            for task in first_pending(todo) for _ in range(plan.config.warmup) for m in plan.methods]
    batch_warm: dict[tuple, Work] = {}
    for job in batch_jobs(plan):
        left = sum((job.method, u) not in done for u in job.units)
        if left:
            baseline, first = job.method == BASELINE, job.units[0]
            work.append(Work(baseline, prompt(first), new, rows=len(job.units), records=left))
            batch_warm.setdefault((job.size, first.task, job.method),  # one short batch each (``batch_runner.py``)
                                  Work(baseline, prompt(first), min(WARMUP_TOKENS, new), len(job.units), 0))
    for job in concurrency_jobs(plan):  # an engine's requests in flight at once, priced as a batch of them
        left = sum((job.method, u) not in done for u in job.units)
        if left:
            work.append(Work(True, prompt(job.units[0]), new, rows=min(job.level, len(job.units)), records=left))
    return work, warm + list(batch_warm.values())


def done_keys(run_dir: Path) -> set:
    """The (method, unit) keys of the records a resumed run already has."""
    if not (run_dir / MANIFEST_FILE).is_file():
        return set()
    return {r.key for r in read_validated_records(run_dir, read_manifest(run_dir))}


def typical_prompts(ctx: RunContext) -> dict[str, int]:
    """task -> the mean token count of its turn-1 prompts (at most ``PROMPT_SAMPLE`` of them, spread over the task)."""
    out = {}
    for task, qs in ctx.plan.questions.items():
        if qs:
            sample = qs[:: max(1, len(qs) // PROMPT_SAMPLE)][:PROMPT_SAMPLE]
            out[task] = round(statistics.mean(len(ctx.prompt_for(Unit(task, q.question_id, 1), q)) for q in sample))
    return out


def run_cost(ctx: RunContext, prompts: dict[str, int]) -> tuple[Cost, str, bool]:
    """(T(n), where it came from, whether no cost profile exists yet): the run's or the cached profile, else
    ``PROBE_SIZES`` timed now after the run's typical context."""
    lm, backend = ctx.loaded, ctx.engine.backend
    for path, what in ((ctx.run_dir / PROFILE_FILE, "the run's cost profile"),
                       (cached_profile_path(lm, backend, cache_dir()), "the cached cost profile")):
        if path.is_file():
            try:
                return cost_function(load_profile(path)), what, False
            except ConfigError:  # a damaged profile: budget=auto says so when it reads it; here, time a few forwards
                pass
    limit = config_context(getattr(lm.model, "config", None)) or 1 << 30
    context = min(round(statistics.mean(prompts.values())) + ctx.cfg.max_new_tokens // 2, limit - max(PROBE_SIZES))
    curve = measure.measure_forward_curve(lm.model, max(context, 1), PROBE_SIZES, PROBE_REPEATS, warmup=1,
                                          backend=backend)
    timed = len(PROBE_SIZES) * (PROBE_REPEATS + 1)
    return cost_function({"latency_s": {str(n): t for n, t in curve.items()}}), f"{timed} timed forwards", True


def profile_build(ctx: RunContext, cost: Cost) -> PendingBuild:
    """``budget=auto``'s measurement of this machine's cost profile (``cost_profile.cached_cost_profile``)."""
    limit = config_context(getattr(ctx.loaded.model, "config", None))
    seconds = sum(float(cost(c)) + (PROFILE_WARMUP + REPEATS) * sum(float(cost(n, c)) for n in SIZES)
                  for c in contexts_for(ctx.longest_context, limit))
    return PendingBuild("measure the cost profile (budget=auto)", seconds, "cost profile")


def first_use_builds(ctx: RunContext) -> list[PendingBuild | None]:
    """What each method's factory will build or train for each task before the first generation."""
    plan, out = ctx.plan, []
    for label in plan.methods:
        name = split_label(label)[0]
        if name in FIRST_USE_BUILDS:
            check, config = FIRST_USE_BUILDS.get(name), method_config(label, plan.options_of(label))
            out += [check(config, MethodEnv.for_task(ctx.loaded, plan.data_dir, cache_dir(), task))
                    for task in plan.tasks]
    return out
