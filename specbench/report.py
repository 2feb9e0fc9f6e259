"""Per-subtask tables of one run, computed from its records by ``specbench.stats`` (never from memory).

Speedup of a method on a subtask = (its tokens / its seconds) / (AR tokens / AR seconds), pooled over
the (question, turn, repeat) units both have, with a 95% paired-bootstrap CI over questions ("1.42x
±0.05"); tokens are ``len(output_ids)`` on both sides. tau = emitted tokens / forward passes.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from tabulate import tabulate

from specbench.catalog import BASELINE, OVERALL
from specbench.lossless import EXACT, MISMATCH, TIE
from specbench.numfmt import fmt_num
from specbench.stats import Cell, Run, backend_label, load_run, ran_on_cpu, run_stats


def _header(manifest: dict[str, Any]) -> list[str]:
    m = manifest.get("model", {})
    hw = manifest.get("hardware", {})
    cfg = manifest.get("config", {})
    gpu = f", GPU {hw['gpu']}" if hw.get("gpu") and not ran_on_cpu(manifest) else ""
    lines = [
        f"Run `{manifest.get('run_name', '')}`: model {m.get('id')} ({m.get('dtype')}, TF32 {m.get('tf32')}, "
        f"backend {backend_label(manifest)}), "
        f"{hw.get('cpu')} x{hw.get('cores')}{gpu}; max_new_tokens {cfg.get('max_new_tokens')}, "
        f"limit {cfg.get('limit')}, repeats {cfg.get('repeats')}."
    ]
    if manifest.get("imported"):  # Spec-Bench answers: their token counts and timings, no lossless check
        lines.append(str(manifest["imported"].get("note")))
    versions = manifest.get("task_versions") or {}
    if versions:
        lines.append("Task versions: " + ", ".join(f"{t} v{v}" for t, v in versions.items()) + ".")
    return lines


def render(run: Run, fmt: str = "github") -> str:
    """Markdown (``github``) tables: speedup ±CI, tau, tokens/s, acceptance, draft share, lossless counts."""
    if not run.records:
        return "no records yet\n"
    stats = run_stats(run)
    cols = run.subtasks() + [OVERALL]
    methods = run.methods()
    parts = _header(run.manifest) if run.manifest else []
    tables: list[tuple[str, Callable[[Cell], str]]] = [
        ("Speedup vs AR (tokens/s ratio on the same questions, 95% bootstrap CI)", Cell.speedup_text),
        ("Mean tokens per forward pass (tau)", lambda c: fmt_num(c.tau, "{:.2f}")),
        ("Tokens per second", lambda c: fmt_num(c.tokens_per_s, "{:.1f}")),
        ("Acceptance rate (accepted / drafted tokens)", lambda c: fmt_num(c.acceptance_rate, "{:.2f}")),
        ("Share of time spent drafting", lambda c: fmt_num(c.draft_share, "{:.1%}")),
    ]
    for title, cell_text in tables:
        rows = [[m] + [cell_text(stats[m][c]) if c in stats[m] else "-" for c in cols] for m in methods]
        parts.append(f"### {title}\n\n" + tabulate(rows, headers=["method"] + cols, tablefmt=fmt))
    rows = []
    for m in methods:
        if m == BASELINE or OVERALL not in stats[m]:
            continue
        n = stats[m][OVERALL].lossless
        status = "unchecked" if not any(n.values()) else "OK" if n[MISMATCH] == 0 else "MISMATCH"
        rows.append([m, n[EXACT], n[TIE], n[MISMATCH], status])
    if rows:
        parts.append(
            "### Lossless check vs AR (fp32 token ids)\n\n"
            + tabulate(rows, headers=["method", "exact", "numerical tie", "MISMATCH", "status"], tablefmt=fmt)
        )
    return "\n\n".join(parts) + "\n"


def write_report(run_dir: str | Path) -> str:
    """Render the run's report, write ``report.md`` into the run folder, and return the text."""
    run = load_run(run_dir)
    text = f"# specbench report\n\n{render(run)}"
    (run.path / "report.md").write_text(text)
    return text
