"""A run's results as data: ``summary.json`` (versioned, everything the report tables show, CIs included)
and ``summary.csv`` (one flat row per method x scope), both pure functions of the run folder.

``summary.json`` (``SUMMARY_SCHEMA_VERSION`` 1; schema: ``specbench/reports/summary.schema.json``)::

    {"summary_schema_version": 1, "run": {name, model, dtype, device, backend, hardware, ...},
     "methods": [{"method": "pld", "lossless_status": "exact", "overhead": {...},
                  "subtasks": {"MT-Bench": CELL, ..., "Overall": CELL},
                  "categories": {"writing": CELL, ...}}]}   # MT-Bench categories

A CELL holds the speedup and its 95% CI bounds, tau, tokens/s, acceptance, time shares, lossless counts,
latency (TTFT, decode tokens/s, per-token p50/p90/p99), peak memory and the acceptance profile
(``specbench.results.acceptance``), the acceptance per request (vLLM's definition and ours, with its spread;
``specbench.results.request_acceptance``), the TPOT / ITL / E2E percentiles
(``specbench.results.latency_percentiles``) and the plausibility rule's ``tau_ceiling``, ``speedup_floor`` and
``implausible`` (its reason, or null); the top-level ``plausibility`` counts the cells checked and lists the stalled
generations; each cell's ``flags`` are the marks its tables write beside it (``results.cell_flags``: implausible,
stalled, partial, forced merge, machine not idle) and the top-level ``flags`` their notes. Numbers without data (no draft, no AR pair, schema < 4 timings) are null, never NaN
(``jsonfile.finite``).
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from specbench.catalog import BASELINE, ENGINE_BASELINE, OVERALL, OVERHEAD_KEY
from specbench.files.jsonfile import finite
from specbench.reports.labels import backend_label, dtype_label, hardware_label, model_label
from specbench.reports.request_metrics import REQUEST_COLUMNS, request_columns
from specbench.results.progress import progress_of
from specbench.results.loaded_run import Run, engine_label
from specbench.results.lossless import lossless_status
from specbench.results.cell_flags import flag_notes
from specbench.results.plausibility import judge
from specbench.results.stalls import stalled
from specbench.results.stats import DEFAULT_BOOTSTRAP, DEFAULT_SEED, Cell, category_stats, run_stats

SUMMARY_SCHEMA_VERSION = 1
SUMMARY_JSON, SUMMARY_CSV = "summary.json", "summary.csv"
SCHEMA_PATH = Path(__file__).with_name("summary.schema.json")


def cell_json(c: Cell) -> dict[str, Any]:
    """One table cell as JSON (see the module docstring)."""
    return finite({
        "n_questions": c.n_questions, "speedup": c.speedup, "ci_low": c.ci_low, "ci_high": c.ci_high,
        "tau": c.tau, "tokens_per_s": c.tokens_per_s, "acceptance_rate": c.acceptance_rate,
        "mean_draft_size": c.mean_draft_size, "draft_share": c.draft_share, "verify_share": c.verify_share,
        "new_tokens": c.new_tokens, "wall_time_s": c.wall_time_s, "draft_time_s": c.draft_time_s,
        "lossless": dict(c.lossless), **c.latency.to_json(),
        "peak_memory_bytes": c.peak_memory_bytes, "peak_memory_kind": c.peak_memory_kind,
        "acceptance": c.acceptance.to_json(), "tau_ceiling": c.tau_ceiling,
        "speedup_floor": c.speedup_floor, "implausible": c.implausible, "flags": [f.mark for f in c.flags],
        "per_request": c.requests.to_json(), "latency_percentiles": c.percentiles.to_json(),
    })


def method_overhead(manifest: dict[str, Any], method: str) -> dict[str, Any]:
    """What ``method`` declared it adds (``MethodEnv.declare_overhead``), per task and the largest over tasks.

    Manifests written before the declaration existed fall back to a recorded ``datastore_bytes``.

    >>> m = {"artifacts": {"rest": {"gsm8k": {"datastore_bytes": 10}, "wmt": {"overhead": {"storage_bytes": 30}}}}}
    >>> method_overhead(m, "rest")["storage_bytes"], method_overhead(m, "ar")
    (30, {'storage_bytes': None, 'parameters': None, 'per_task': {}})
    """
    per_task: dict[str, dict[str, int | None]] = {}
    for task, art in ((manifest.get("artifacts") or {}).get(method) or {}).items():
        if not isinstance(art, dict):
            continue
        declared = art.get(OVERHEAD_KEY) or {"storage_bytes": art.get("datastore_bytes")}
        per_task[task] = {k: declared.get(k) for k in ("storage_bytes", "parameters")}

    def largest(key: str) -> int | None:
        vals = [v[key] for v in per_task.values() if isinstance(v.get(key), int)]
        return max(vals) if vals else None

    return {"storage_bytes": largest("storage_bytes"), "parameters": largest("parameters"), "per_task": per_task}


def run_json(run: Run) -> dict[str, Any]:
    m = run.manifest
    cfg = m.get("config") or {}
    return {
        "name": run.name, "model": model_label(m), "model_hash": (m.get("model") or {}).get("hash"),
        "dtype": dtype_label(m), "tf32": (m.get("model") or {}).get("tf32"),
        "device": (m.get("model") or {}).get("device"), "backend": backend_label(m),
        "hardware": hardware_label(m), "max_new_tokens": cfg.get("max_new_tokens"), "limit": cfg.get("limit"),
        "split": cfg.get("split", "eval"),  # runs from before splits ran what is now the eval split (or all, custom)
        "repeats": cfg.get("repeats"), "tasks": list(cfg.get("tasks") or []),
        "task_versions": dict(m.get("task_versions") or {}), "git_commit": m.get("git_commit"),
        "timestamp": m.get("timestamp"), "n_records": len(run.records), **partial_json(run),
    }


def partial_json(run: Run) -> dict[str, Any]:
    """``partial``, ``records_present`` / ``records_planned`` and ``running`` for an unfinished run (records
    missing from its plan, or a process holding its lock); nothing for a finished one (its summary unchanged)."""
    progress = progress_of(run)
    if progress is None or not progress.partial:
        return {}
    return {"partial": True, "records_present": progress.present, "records_planned": progress.planned,
            "running": progress.running is not None}


def build_summary(run: Run, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED,
                  stats: dict[str, dict[str, Cell]] | None = None,
                  categories: dict[str, dict[str, Cell]] | None = None) -> dict[str, Any]:
    """The ``summary.json`` object of ``run`` (pass ``stats`` / ``categories`` already computed to reuse them).

    A run decoded at several batch sizes: ``methods`` at its ``base_batch`` (``run.batch_size``), and every
    size under ``by_batch_size`` (``{"4": [methods at batch size 4], ...}``).
    """
    stats = run_stats(run, n_boot, seed) if stats is None else stats
    categories = category_stats(run, n_boot=n_boot, seed=seed) if categories is None else categories
    out = {"summary_schema_version": SUMMARY_SCHEMA_VERSION, "run": run_json(run),
           "bootstrap": {"resamples": n_boot, "seed": seed, "confidence": 0.95},
           "methods": _methods_json(run, stats, categories), "plausibility": plausibility_json(run, stats),
           "flags": flag_notes(stats)}
    if run.batch_sizes() != [1]:
        out["run"]["batch_size"] = run.base_batch()
        out["by_batch_size"] = {}
        for size in run.batch_sizes():
            view = run.at_batch(size)
            out["by_batch_size"][str(size)] = _methods_json(view, run_stats(view, n_boot, seed),
                                                            category_stats(view, n_boot=n_boot, seed=seed))
    return out


def plausibility_json(run: Run, stats: dict[str, dict[str, Cell]]) -> dict[str, Any]:
    """``plausibility``: the cells the rule checked (``methods``' subtasks and Overall), how many it found implausible,
    and a line per stalled generation of the run (every batch size)."""
    verdicts = judge(stats)
    return {"cells_checked": len(verdicts), "implausible": sum(v.implausible for v in verdicts),
            "stalled": [s.line() for s in stalled(run.every or run.records)]}


def serving_json(engine: Run, counters: dict[str, Any], n_boot: int = DEFAULT_BOOTSTRAP,
                 seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """``summary.json``'s ``engine``: the engine view's rows (its baseline named ``engine:off`` again) at its base
    level and, with several concurrency levels, at each (``by_concurrency``), and its counters."""
    def rows(view: Run) -> list[dict]:
        out = _methods_json(view, run_stats(view, n_boot, seed), category_stats(view, n_boot=n_boot, seed=seed))
        for m in out:
            m["method"] = ENGINE_BASELINE if m["method"] == BASELINE else m["method"]
        return out

    out: dict[str, Any] = {"label": engine_label(engine.manifest), "methods": rows(engine), "counters": counters}
    if engine.batch_sizes() != [1]:
        out["by_concurrency"] = {str(c): rows(engine.at_batch(c)) for c in engine.batch_sizes()}
    return out


def _methods_json(run: Run, stats: dict[str, dict[str, Cell]], categories: dict[str, dict[str, Cell]]) -> list[dict]:
    return [{"method": method, "lossless_status": lossless_status(cells, method),
             "overhead": method_overhead(run.manifest, method),
             "subtasks": {sub: cell_json(c) for sub, c in cells.items()},
             "categories": {cat: cell_json(c) for cat, c in (categories.get(method) or {}).items()}}
            for method, cells in stats.items()]


CSV_COLUMNS = (
    "method", "scope", "name", "n_questions", "speedup", "ci_low", "ci_high", "tau", "tokens_per_s",
    "decode_tokens_per_s", "ttft_mean_s", "ttft_p50_s", "token_latency_p50_s", "token_latency_p90_s",
    "token_latency_p99_s", "acceptance_rate", "mean_draft_size", "draft_share", "verify_share", "new_tokens",
    "wall_time_s", "peak_memory_bytes", "peak_memory_kind", "lossless_exact", "lossless_tie", "lossless_mismatch",
    "overhead_storage_bytes", "overhead_parameters", "tau_ceiling", "implausible", *REQUEST_COLUMNS, "flags",
)


def summary_csv(summary: dict[str, Any]) -> str:
    """``summary.csv``: a row per method x scope (``subtask`` incl. Overall, or ``category``); empty = null.

    The per-position acceptance and the histogram are lists: they are in ``summary.json`` only. An engine's rows
    (``engine:off``, ``engine:SETTING``) follow specbench's own.
    """
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for m in summary["methods"] + (summary.get("engine") or {}).get("methods", []):
        for scope, cells in (("subtask", m["subtasks"]), ("category", m["categories"])):
            for name, c in cells.items():
                lat = c["token_latency_s"]
                row = {k: c.get(k) for k in CSV_COLUMNS if k in c}
                row.update(method=m["method"], scope="overall" if name == OVERALL else scope, name=name,
                           token_latency_p50_s=lat["p50"], token_latency_p90_s=lat["p90"], token_latency_p99_s=lat["p99"],
                           overhead_storage_bytes=m["overhead"]["storage_bytes"],
                           overhead_parameters=m["overhead"]["parameters"],
                           **{f"lossless_{k}": v for k, v in c["lossless"].items()}, **request_columns(c),
                           flags="; ".join(c.get("flags") or []))  # (``; ``: a forced merge's mark holds commas)
                w.writerow({k: "" if v is None else v for k, v in row.items()})
    return buf.getvalue()


def summary_text(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=1, allow_nan=False) + "\n"
