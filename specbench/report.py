"""Per-subtask tables computed from a run's records (never from in-memory state).

Speedup of a method on a subtask = (its tokens / its seconds) / (AR tokens / AR seconds), summed over
the (question, turn, repeat) keys both have; tokens are ``len(output_ids)`` on both sides. "Overall"
pools every subtask the same way. tau = emitted tokens / forward passes (prefill included).
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from tabulate import tabulate

from specbench.lossless import EXACT, MISMATCH, TIE
from specbench.records import read_manifest, read_records

SUBTASK_ORDER = ("MT-Bench", "HumanEval", "GSM8K", "CNN/DM", "NQ-RAG", "WMT", "NQ")
BASELINE = "ar"
OVERALL = "Overall"


def _key(r: dict[str, Any]) -> tuple:
    return (r["task"], str(r["question_id"]), r["turn"], r["repeat"])


def subtasks_of(records: Iterable[dict[str, Any]]) -> list[str]:
    present = {r["subtask"] for r in records}
    return [s for s in SUBTASK_ORDER if s in present] + sorted(present - set(SUBTASK_ORDER))


def methods_of(records: Iterable[dict[str, Any]]) -> list[str]:
    names = list(dict.fromkeys(r["method"] for r in records))
    return sorted(names, key=lambda m: (m != BASELINE, names.index(m)))


def _totals(recs: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "tokens": sum(len(r["output_ids"]) for r in recs),
        "time": sum(r["wall_time_s"] for r in recs),
        "passes": sum(r["forward_passes"] for r in recs),
        "draft_time": sum(r["draft_time_s"] for r in recs),
        "drafted": sum(sum(r["draft_sizes"]) for r in recs),
        "accepted": sum(sum(a - 1 for a in r["accept_lengths"]) for r in recs),
        "n": len(recs),
    }


def summarize(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """``{method: {subtask or "Overall": stats}}`` with speedup, tau, tokens/s, acceptance, draft share."""
    by_method: dict[str, dict[tuple, dict]] = defaultdict(dict)
    for r in records:
        by_method[r["method"]][_key(r)] = r
    ar = by_method.get(BASELINE, {})
    out: dict[str, dict[str, dict[str, float]]] = {}
    for method, recs in by_method.items():
        groups: dict[str, list[tuple]] = defaultdict(list)
        for k, r in recs.items():
            groups[r["subtask"]].append(k)
            groups[OVERALL].append(k)
        out[method] = {}
        for sub, keys in groups.items():
            mine = _totals([recs[k] for k in keys])
            paired = [k for k in keys if k in ar]
            base = _totals([ar[k] for k in paired])
            m_pair = _totals([recs[k] for k in paired])
            speed = None
            if paired and base["time"] > 0 and m_pair["time"] > 0 and base["tokens"] > 0:
                speed = (m_pair["tokens"] / m_pair["time"]) / (base["tokens"] / base["time"])
            out[method][sub] = {
                "speedup": speed,
                "tau": mine["tokens"] / mine["passes"] if mine["passes"] else None,
                "tokens_per_s": mine["tokens"] / mine["time"] if mine["time"] else None,
                "acceptance_rate": mine["accepted"] / mine["drafted"] if mine["drafted"] else None,
                "draft_share": mine["draft_time"] / mine["time"] if mine["time"] else None,
                "records": mine["n"],
            }
    return out


def lossless_counts(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for r in records:
        if r["method"] == BASELINE:
            continue
        c = counts.setdefault(r["method"], {EXACT: 0, TIE: 0, MISMATCH: 0})
        c[r["lossless_class"]] += 1
    return counts


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def render(records: list[dict[str, Any]], manifest: dict[str, Any] | None = None, fmt: str = "github") -> str:
    """Markdown (``github``) or terminal tables: speedup, tau, tokens/s per subtask, and lossless counts."""
    if not records:
        return "no records yet\n"
    stats = summarize(records)
    cols = subtasks_of(records) + [OVERALL]
    methods = methods_of(records)
    parts: list[str] = []
    if manifest:
        m = manifest.get("model", {})
        hw = manifest.get("hardware", {})
        cfg = manifest.get("config", {})
        parts.append(
            f"Run `{manifest.get('run_name', '')}`: model {m.get('id')} ({m.get('dtype')}, TF32 {m.get('tf32')}), "
            f"{hw.get('cpu')} x{hw.get('cores')}{', GPU ' + hw['gpu'] if hw.get('gpu') else ''}; "
            f"max_new_tokens {cfg.get('max_new_tokens')}, limit {cfg.get('limit')}, repeats {cfg.get('repeats')}."
        )
        versions = manifest.get("task_versions") or {}
        if versions:
            parts.append("Task versions: " + ", ".join(f"{t} v{v}" for t, v in versions.items()) + ".")
    tables = [
        ("Speedup vs AR (tokens/s ratio, same questions)", "speedup", ".2f", "x"),
        ("Mean tokens per forward pass (tau)", "tau", ".2f", ""),
        ("Tokens per second", "tokens_per_s", ".1f", ""),
        ("Acceptance rate (accepted / drafted tokens)", "acceptance_rate", ".2f", ""),
        ("Share of time spent drafting", "draft_share", ".1%", ""),
    ]
    for title, field, spec, suffix in tables:
        rows = [[m] + [_fmt(stats[m].get(c, {}).get(field), spec, suffix) for c in cols] for m in methods]
        parts.append(f"### {title}\n\n" + tabulate(rows, headers=["method"] + cols, tablefmt=fmt))
    counts = lossless_counts(records)
    if counts:
        rows = [[m, c[EXACT], c[TIE], c[MISMATCH], "OK" if c[MISMATCH] == 0 else "MISMATCH"] for m, c in counts.items()]
        parts.append(
            "### Lossless check vs AR (fp32 token ids)\n\n"
            + tabulate(rows, headers=["method", "exact", "numerical tie", "MISMATCH", "status"], tablefmt=fmt)
        )
    return "\n\n".join(parts) + "\n"


def write_report(run_dir: str | Path) -> str:
    """Render the run's report, write ``report.md`` into the run folder, and return the text."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    text = f"# specbench report\n\n{render(read_records(run_dir), manifest)}"
    (run_dir / "report.md").write_text(text)
    return text
