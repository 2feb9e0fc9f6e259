"""Per-subtask tables of one run, computed from its records by ``specbench.results.stats`` (never from memory).

Speedup of a method on a subtask = (its tokens / its seconds) / (AR tokens / AR seconds), pooled over
the (question, turn, repeat) units both have, with a 95% paired-bootstrap CI over questions ("1.42x
±0.05"); tokens are ``len(output_ids)`` on both sides. tau = emitted tokens / forward passes. Then the
metric tables of ``specbench.reports.metric_tables`` (latency and memory, per-position acceptance, accepted-length
histogram, MT-Bench categories); a run with long-input tasks adds the tables against input length
(``specbench.reports.long_context``). ``write_report`` also writes ``summary.json`` / ``summary.csv`` and, for
such a run, ``long_context.png``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from specbench.catalog import BASELINE, OVERALL
from specbench.engine.sampling_config import manifest_sampling
from specbench.files.jsonfile import write_outputs
from specbench.profiling.cost_profile import cost_function
from specbench.profiling.machine_state import machine_note
from specbench.profiling.profile import load_profile
from specbench.reports import batch_report as BR
from specbench.reports.batch_report import batch_stats
from specbench.reports import metric_tables as MT
from specbench.reports.auto_report import auto_table
from specbench.reports.budget_report import auto_vs_default_table, prediction_table
from specbench.reports.drafter_state import drafter_state_table
from specbench.reports.labels import backend_label, checked_precision, ran_on_cpu
from specbench.reports.long_context import length_prediction_table, length_tables
from specbench.reports.long_context_plot import PLOT_FILE, write_length_figure
from specbench.reports.noise_floor import noise_floor_note
from specbench.reports.numfmt import fmt_num
from specbench.reports.request_metrics import request_metrics_table
from specbench.reports.serving_report import serving_counters, serving_section
from specbench.reports.spec_bench_section import spec_bench_section
from specbench.reports.summary import (SUMMARY_CSV, SUMMARY_JSON, build_summary, method_overhead, serving_json,
                                       summary_csv, summary_text)
from specbench.reports.table import Table, html_text
from specbench.reports.table import escaped_tabulate as tabulate  # every cell escaped for markdown and HTML
from specbench.reports.timing_sections import plausibility_parts, stall_part
from specbench.results.cell_flags import FORCED_MERGE, run_flags
from specbench.results.context_lengths import length_groups
from specbench.results.logprob_check import logprob_stats, logprob_table_rows
from specbench.results.lossless import EXACT, MISMATCH, TIE
from specbench.results.progress import progress_of
from specbench.results.loaded_run import ENGINE, Run, load_run
from specbench.results.run_folder import PROFILE_FILE
from specbench.results.stats import Cell, category_stats, run_stats


def _header(manifest: dict[str, Any]) -> list[str]:
    m = manifest.get("model", {})
    hw = manifest.get("hardware", {})
    cfg = manifest.get("config", {})
    gpu = f", GPU {hw['gpu']}" if hw.get("gpu") and not ran_on_cpu(manifest) else ""
    split = f" of the {cfg['split']} split" if cfg.get("split", "eval") != "eval" else ""  # (eval: as before splits)
    lines = [
        f"Run `{manifest.get('run_name', '')}`: model {m.get('id')} ({m.get('dtype')}, TF32 {m.get('tf32')}, "
        f"backend {backend_label(manifest)}), "
        f"{hw.get('cpu')} x{hw.get('cores')}{gpu}; max_new_tokens {cfg.get('max_new_tokens')}, "
        f"limit {cfg.get('limit')}{split}, repeats {cfg.get('repeats')}; sampling {_sampling_text(manifest)}."
    ]
    busy = machine_note(manifest)  # other processes shared the CPU while it ran (none before runs recorded it)
    if busy:
        lines.append(busy)
    template = manifest.get("chat_template")
    if template:  # (runs from before templates existed name none)
        lines.append(f"Prompts: chat template `{template.get('name')}` (asked: {template.get('requested')}), "
                     f"first prompt's text sha256 {template.get('first_prompt_sha256')}.")
    if cfg.get("preset"):
        lines.append(f"Preset: `{cfg['preset']}` (its values fill every setting not given explicitly; see the config).")
    if manifest.get("imported"):  # Spec-Bench answers: their token counts and timings, no lossless check
        lines.append(str(manifest["imported"].get("note")))
    lengths = manifest.get("context_lengths") or {}
    cut = [f"{t} {v.get('requested')} → {v.get('prompt_tokens')} tokens" for t, v in lengths.items()
           if isinstance(v, dict) and v.get("prompt_tokens") != v.get("requested")]
    if cut:
        lines.append("Input lengths cut to fit the model's context with --max-new-tokens and the draft headroom: "
                     + ", ".join(cut) + ".")
    versions = manifest.get("task_versions") or {}
    if versions:
        lines.append("Task versions: " + ", ".join(f"{t} v{v}" for t, v in versions.items()) + ".")
    recipes = drafter_recipes(manifest)
    if recipes:
        lines.append("Trained drafters' recipes: " + ", ".join(f"{m} {r}" for m, r in recipes.items()) + ".")
    return lines


def drafter_recipes(manifest: dict[str, Any]) -> dict[str, str]:
    """Method label -> the training recipe its drafter came from (``artifacts[label][task]["recipe"]``).

    >>> drafter_recipes({"artifacts": {"eagle": {"gsm8k": {"recipe": "quick"}}, "eagle@full": {"gsm8k": {"recipe": "full"}},
    ...                                "pld": {"gsm8k": {}}}})
    {'eagle': 'quick', 'eagle@full': 'full'}
    """
    out: dict[str, str] = {}
    for label, per_task in (manifest.get("artifacts") or {}).items():
        found = {str(a["recipe"]) for a in (per_task or {}).values() if isinstance(a, dict) and a.get("recipe")}
        if found:
            out[label] = "/".join(sorted(found))
    return out


def _sampling_text(manifest: dict[str, Any]) -> str:
    s = manifest_sampling(manifest)
    return "greedy (T=0)" if s.greedy else f"{s.label()}, seed {s.seed}"


def render(run: Run, fmt: str = "github", stats: dict[str, dict[str, Cell]] | None = None,
           categories: dict[str, dict[str, Cell]] | None = None) -> str:
    """Markdown (``github``) tables: speedup ±CI, tau, tokens/s, acceptance, draft share, lossless counts,
    then the metric tables (pass ``stats`` / ``categories`` already computed to reuse them). An engine's view
    (``loaded_run.subject_view``) names its baseline ``engine:off`` and has no draft share (engines do not say)."""
    if not run.records:
        return "no records yet\n"
    stats = run_stats(run) if stats is None else stats
    categories = category_stats(run) if categories is None else categories
    cols = run.subtasks() + [OVERALL]
    methods = run.methods()
    parts = [html_text(line) for line in _header(run.manifest)] if run.manifest else []  # (names from the run folder)
    progress = progress_of(run)
    if progress is not None and progress.partial:  # interrupted or still running: its tables are not the run's
        parts.append(f"**Partial run: {progress.text()}.** The tables cover only the records present.")
    parts += [f"**Forced merge:** {html_text(f.note.split(': ', 1)[1])}; its figures are marked *({f.mark})*."
              for f in run_flags(run) if f.kind == FORCED_MERGE]
    engine_view = run.manifest.get("view") == ENGINE
    base = "engine:off" if engine_view else "AR"
    tables: list[tuple[str, Callable[[Cell], str]]] = [
        (f"Speedup vs {base} (tokens/s ratio on the same questions, 95% bootstrap CI)", Cell.speedup_text),
        ("Mean tokens per forward pass (tau)", lambda c: fmt_num(c.tau, "{:.2f}")),
        ("Tokens per second", lambda c: fmt_num(c.tokens_per_s, "{:.1f}")),
        ("Acceptance rate (accepted / drafted tokens)", lambda c: fmt_num(c.acceptance_rate, "{:.2f}")),
        ("Share of time spent drafting", lambda c: fmt_num(c.draft_share, "{:.1%}")),
    ][: 4 if engine_view else 5]
    for title, cell_text in tables:
        rows = [[m] + [cell_text(stats[m][c]) if c in stats[m] else "-" for c in cols] for m in methods]
        parts.append(f"### {title}\n\n" + tabulate(rows, headers=["method"] + cols, tablefmt=fmt))
    # under the speedup table: the noise floor (a run with an ``ar@twin`` row), the plausibility rule's count and
    # findings, the stalled generations
    stall = stall_part(run.every or run.records)
    below = [*filter(None, [noise_floor_note(stats)]), *plausibility_parts(stats), *filter(None, [stall])]
    at = len(parts) - len(tables) + 1
    parts[at:at] = below
    parts += spec_bench_section(run, fmt)  # --preset spec-bench only: the published leaderboard's definition
    rows = []
    for m in methods:
        if m == BASELINE or OVERALL not in stats[m]:
            continue
        n = stats[m][OVERALL].lossless
        status = "unchecked" if not any(n.values()) else "OK" if n[MISMATCH] == 0 else "MISMATCH"
        rows.append([m, n[EXACT], n[TIE], n[MISMATCH], status])
    sampled = logprob_stats(run)
    if sampled:  # T > 0: outputs differ from AR's by design; the token check gives way to a distributional one
        parts.append(
            "### Distributional check vs AR (temperature > 0; replaces the token-for-token lossless check)\n\n"
            "Mean target log-probability per emitted token under the sampling distribution (95% bootstrap CI "
            "over questions) and its NLL ratio to AR on the same questions (paired CI); a lossless method "
            "matches AR up to sampling noise.\n\n"
            + tabulate(logprob_table_rows(sampled), headers=["method", "mean log-prob", "NLL ratio vs AR", "status"],
                       tablefmt=fmt)
        )
    elif rows:
        parts.append(
            f"### Lossless check vs {base} ({checked_precision(run.manifest or {})} token ids)\n\n"
            + tabulate(rows, headers=["method", "exact", "numerical tie", "MISMATCH", "status"], tablefmt=fmt)
        )
    parts += _budget_sections(run, stats, fmt)
    parts += _length_sections(run, stats, fmt)
    parts += _metric_sections(run, stats, categories, fmt)
    state = drafter_state_table(run.records)  # (drafters that report their own state: SWIFT's layer set)
    if state is not None:
        parts.append(f"### {state.title}\n\n" + tabulate(state.rows, headers=state.headers, tablefmt=fmt))
    return "\n\n".join(parts) + "\n"


def _budget_sections(run: Run, stats: dict[str, dict[str, Cell]], fmt: str) -> list[str]:
    """Default vs ``budget=auto`` side by side, and the cost model's prediction when the run used a profile."""
    tables = [auto_vs_default_table(run, stats)]
    profile = load_profile(run.path / PROFILE_FILE) if (run.path / PROFILE_FILE).is_file() else None
    if profile is not None:
        tables.append(prediction_table(run, profile))
    tables.append(auto_table(run.every or run.records, None if profile is None else cost_function(profile)))
    return [f"### {t.title}\n\n" + tabulate(t.rows, headers=t.headers, tablefmt=fmt) for t in tables if t and t.rows]


def _length_sections(run: Run, stats: dict[str, dict[str, Cell]], fmt: str) -> list[str]:
    """Speedup, decode-only speedup, tau and TTFT against input length (long-input tasks), the cost model's
    prediction at each length when the run has a profile, and the figure ``write_report`` draws."""
    groups = length_groups(run.records)
    if not groups:
        return []
    tables = length_tables(groups, run.methods(), stats)
    if (run.path / PROFILE_FILE).is_file():
        tables.append(length_prediction_table(groups, run.methods(),
                                              cost_function(load_profile(run.path / PROFILE_FILE))))
    parts = [f"### {t.title}\n\n" + tabulate(t.rows, headers=t.headers, tablefmt=fmt) for t in tables if t and t.rows]
    return parts + [f"![speedup and tau against input length]({PLOT_FILE})"]


def _metric_sections(run: Run, stats: dict[str, dict[str, Cell]], categories: dict[str, dict[str, Cell]],
                     fmt: str) -> list[str]:
    rows = [(m, m, stats[m]) for m in run.methods()]
    overheads = {m: method_overhead(run.manifest, m) for m in run.methods()}
    cat_names = list(dict.fromkeys(c for cells in categories.values() for c in cells))
    tables: list[Table | None] = [
        MT.decode_throughput_table(rows, run.subtasks()),
        MT.latency_table(rows, overheads),
        request_metrics_table(rows),  # (per request: vLLM's mean acceptance length beside tau; TPOT/ITL/E2E)
        MT.position_table(rows),
        MT.histogram_table(rows),
        MT.category_table([(m, m, categories[m]) for m in run.methods() if m in categories], cat_names),
    ]
    parts = [f"### {t.title}\n\n" + tabulate(t.rows, headers=t.headers, tablefmt=fmt) for t in tables if t is not None]
    hist = MT.text_histograms(rows)
    if hist:
        parts.append(f"### Accepted-length histogram per method\n\n```\n{hist}\n```")
    return parts


def _batch_sections(run: Run, by_size: dict[int, dict[str, dict[str, Cell]]], fmt: str = "github") -> str:
    """The batch-size tables (``batch_report.py``) and, per batch size above 1, its speedup per subtask."""
    base, axis = run.base_batch(), BR.axis_of(run)
    parts = [f"## {axis.title} {', '.join(map(str, by_size))}\n\nThe tables above are at {axis.name} "
             f"{base}; here every level, each method against {axis.baseline} at the same level."]
    for t in (BR.speedup_table(run, by_size), BR.latency_table(run), BR.lossless_table(run)):
        parts.append(f"### {t.title}\n\n" + tabulate(t.rows, headers=t.headers, tablefmt=fmt))
    for size, stats in by_size.items():
        if size == base:
            continue
        view = run.at_batch(size)
        cols = view.subtasks() + [OVERALL]
        rows = [[m] + [stats[m][c].speedup_text() if c in stats.get(m, {}) else "-" for c in cols] for m in view.methods()]
        parts.append(f"### Speedup at {axis.name} {size}\n\n" + tabulate(rows, headers=["method"] + cols, tablefmt=fmt))
    if BR.write_plot(run, by_size, run.path):
        parts.append(f"Plot: `{axis.plot_file}`.")
    return "\n\n".join(parts) + "\n"


def _serving_sections(own: Run, engine: Run, own_stats: dict[str, dict[str, Cell]]) -> str:
    """The engine under test's section (``serving_report.py``): its view's tables, then its own tables."""
    stats = run_stats(engine)
    rendered = render(engine, stats=stats, categories=category_stats(engine))
    rendered = rendered[rendered.find("### "):]  # (the run's header lines are the report's, above)
    if engine.batch_sizes() != [1]:
        rendered += "\n\n" + _batch_sections(engine, batch_stats(engine))
    return serving_section(own, engine, stats, own_stats, rendered)


FORMATS = ("md", "json", "csv")
REPORT_FILE = "report.md"


@dataclass(frozen=True)
class WrittenReport:
    text: str  # what ``fmt`` asked for
    not_written: tuple[str, ...]  # the files a full or read-only folder refused (said on stderr)


def write_report(run_dir: str | Path, fmt: str = "md") -> str:
    """``report_files``'s text: a folder that cannot be written costs only the files (said on stderr)."""
    return report_files(run_dir, fmt).text


def report_files(run_dir: str | Path, fmt: str = "md") -> WrittenReport:
    """Write ``report.md``, ``summary.json`` and ``summary.csv`` into the run folder; the text of ``fmt`` (``md`` =
    the report, ``json`` / ``csv`` = the summary files) and the files that could not be written (read-only, full:
    ``jsonfile.write_outputs``)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")
    run = load_run(run_dir)
    stats, categories = run_stats(run), category_stats(run)
    text = f"# specbench report\n\n{render(run, stats=stats, categories=categories)}"
    by_size = batch_stats(run) if run.batch_sizes() != [1] else None
    if by_size:
        text += "\n" + _batch_sections(run, by_size)
    engine = load_run(run_dir, subject=ENGINE) if run.manifest.get("engine") else None
    if engine is not None and engine.records:
        text += "\n" + _serving_sections(run, engine, stats)
    if not run.records:
        return WrittenReport(text, tuple(write_outputs(run.path, {REPORT_FILE: text})))
    groups = length_groups(run.records)
    if groups and run.path.is_dir():
        write_length_figure(run.path, groups, run.methods(), stats)
    summary = build_summary(run, stats=stats, categories=categories)
    if engine is not None and engine.records:
        summary["engine"] = serving_json(engine, serving_counters(engine))
    out = {"md": text, "json": summary_text(summary), "csv": summary_csv(summary)}
    failed = write_outputs(run.path, {REPORT_FILE: text, SUMMARY_JSON: out["json"], SUMMARY_CSV: out["csv"]})
    return WrittenReport(out[fmt], tuple(failed))
