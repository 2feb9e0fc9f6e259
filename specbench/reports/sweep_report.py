"""A sweep's table (``sweep.md``) and plot (``sweep.png``) from its points' statistics.

The table has one row per point: Overall speedup with its 95% CI, tau, mean draft size, acceptance rate
and the speedup per subtask, then the best point, the budget oracle (a grid with a ``budget`` axis) and the
exact command. The plot shows Overall speedup
(CI error bars) and tau against the first swept key; with more keys, one line per value of the others.

>>> series_of([SweepPoint((("a", "1"), ("b", "x"))), SweepPoint((("a", "2"), ("b", "x")))])
{'b=x': [('1', 0), ('2', 1)]}
"""
from __future__ import annotations

from pathlib import Path

from specbench.catalog import order_subtasks
from specbench.reports.numfmt import fmt_num
from specbench.reports.table import md_text
from specbench.results.budget_oracle import oracle_lines
from specbench.results.sweep import Best, PointResult, SweepPoint, best_line


def sweep_table(method: str, results: list[PointResult]) -> list[str]:
    """The markdown table's lines: one row per point (``method``'s cells), subtask columns in report order."""
    subtasks = order_subtasks({s for r in results for s in r.subtasks})
    headers = ["point", f"{method} Overall speedup", "tau", "mean draft size", "acceptance", *subtasks]
    lines = ["| " + " | ".join(map(md_text, headers)) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(headers) - 1)) + " |"]
    for r in results:
        c = r.overall
        row = [f"`{r.point.label}`", c.speedup_text() if c else "-", fmt_num(c.tau if c else None),
               fmt_num(c.mean_draft_size if c else None), fmt_num(c.acceptance_rate if c else None, "{:.1%}")]
        row += [r.subtasks[s].speedup_text() if s in r.subtasks else "-" for s in subtasks]
        lines.append("| " + " | ".join(row[:1] + [md_text(c) for c in row[1:]]) + " |")  # (the point's own code span)
    return lines


def sweep_markdown(method: str, results: list[PointResult], best: Best | None, command: str, split: str) -> str:
    """The sweep's markdown: a heading, the table, the best point, auto against the best fixed budget (a grid
    with a ``budget`` axis, ``budget_oracle.py``), the command that made it."""
    keys = [k for k, _ in results[0].point.options] if results else []
    lines = [f"# Sweep of {method} over {', '.join(keys)} ({split} split)", "", *sweep_table(method, results)]
    lines += ["", "Speedup = pooled method tokens/s over AR tokens/s on the same questions (± = half the 95% paired "
              "bootstrap CI); tau = tokens per forward pass.", ""]
    head, _, flags = best_line(method, best).partition("\n")
    lines += [head, ""] + ([f"`{flags}`", ""] if flags else [])
    oracles = oracle_lines(results)
    if oracles:
        lines += ["Budget oracle: auto's Overall speedup against the best fixed budget in hindsight on the same "
                  "questions (AR, never drafting, counts as a fixed budget at 1.00x):", ""]
        lines += [f"- {line}" for line in oracles] + [""]
    lines += ["Command:", "", "```bash", command, "```", ""]
    return "\n".join(lines)


def series_of(points: list[SweepPoint]) -> dict[str, list[tuple[str, int]]]:
    """Plot lines: ``{other keys' label: [(first key's value, point index), ...]}`` in grid order."""
    out: dict[str, list[tuple[str, int]]] = {}
    for i, p in enumerate(points):
        (_, x), rest = p.options[0], p.options[1:]
        out.setdefault(",".join(f"{k}={v}" for k, v in rest), []).append((x, i))
    return out


def write_sweep_plot(method: str, results: list[PointResult], path: Path) -> None:
    """``path`` (PNG): Overall speedup with 95% CI error bars and tau against the first key's values."""
    from specbench.reports.figures import pyplot

    plt = pyplot()
    key = results[0].point.options[0][0]
    xs = list(dict.fromkeys(r.point.options[0][1] for r in results))  # first key's values, as placed on the axis
    fig, (ax_s, ax_t) = plt.subplots(1, 2, figsize=(10.0, 3.8))
    for label, pts in series_of([r.point for r in results]).items():
        rows = [(xs.index(x), results[i].overall) for x, i in pts if results[i].overall is not None]
        sp = [(x, c) for x, c in rows if c.speedup is not None]
        lo = [c.speedup - c.ci_low if c.ci_low is not None else 0.0 for _, c in sp]
        hi = [c.ci_high - c.speedup if c.ci_high is not None else 0.0 for _, c in sp]
        ax_s.errorbar([x for x, _ in sp], [c.speedup for _, c in sp], yerr=[lo, hi], marker="o", capsize=3,
                      label=label or method)
        ax_t.plot([x for x, _ in rows], [c.tau for _, c in rows], marker="o", label=label or method)
    ax_s.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    for ax, ylabel, title in ((ax_s, "Overall speedup vs ar (x)", "speedup (95% paired bootstrap CI)"),
                              (ax_t, "tau (tokens per forward pass)", "tau")):
        ax.set_xticks(range(len(xs)), xs)
        ax.set_xlabel(f"{method}.{key}")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        if len(results[0].point.options) > 1:
            ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
