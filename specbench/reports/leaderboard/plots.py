"""Matplotlib figures of a leaderboard group, returned as PNG data URIs (self-contained pages)."""
from __future__ import annotations

import base64
import io
from typing import Any

from specbench.catalog import BASELINE, OVERALL
from specbench.reports.figures import pyplot
from specbench.reports.leaderboard.tables import Group
from specbench.reports.metric_tables import MAX_DEPTH_COLUMNS, drafting_rows, pooled_shares
from specbench.results.stats import Cell


def to_data_uri(fig: Any) -> str:
    """Encode a figure as a ``data:image/png;base64,...`` URI and close it."""
    plt = pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def speedup_bars(g: Group) -> str:
    """Grouped bars: speedup per subtask (x) per method (bars), 95% CI as error bars."""
    plt = pyplot()
    subs = [*g.subtasks(), OVERALL]
    rows = [r for r in g.rows() if r[1] != BASELINE]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(subs)), 3.6))
    width = 0.8 / max(len(rows), 1)
    for i, (label, _m, cells) in enumerate(rows):
        bars_with_ci(ax, [(j - 0.4 + width * (i + 0.5), cells.get(sub)) for j, sub in enumerate(subs)], width, label)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(subs)), subs)
    ax.set_ylabel("speedup vs ar (x)")
    ax.set_title("Speedup per subtask (95% paired bootstrap CI)")
    if rows:
        ax.legend(fontsize=8, ncol=min(len(rows), 5), loc="upper center", bbox_to_anchor=(0.5, -0.1))
    return to_data_uri(fig)


def bars_with_ci(ax: Any, placed: list[tuple[float, Cell | None]], width: float, label: str) -> None:
    """One bar series: each cell's speedup at its x, the 95% CI as error bars (cells without one skipped)."""
    xs, ys, lo, hi = [], [], [], []
    for x, c in placed:
        if c is None or c.speedup is None:
            continue
        xs.append(x)
        ys.append(c.speedup)
        lo.append(c.speedup - c.ci_low if c.ci_low is not None else 0.0)
        hi.append(c.ci_high - c.speedup if c.ci_high is not None else 0.0)
    ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=label)


def tau_scatter(g: Group) -> str:
    """Overall tau (x) against Overall measured speedup (y), one labelled point per method."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    for label, method, cells in g.rows():
        c = cells.get(OVERALL)
        if c is None:
            continue
        sp = 1.0 if method == BASELINE else c.speedup
        if sp is None:
            continue
        ax.scatter([c.tau], [sp])
        ax.annotate(label, (c.tau, sp), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel("tau (tokens per forward pass)")
    ax.set_ylabel("speedup vs ar (x)")
    ax.set_title("tau vs speedup")
    return to_data_uri(fig)


def time_breakdown(g: Group) -> str:
    """Stacked horizontal bars: share of wall time spent drafting, verifying, and elsewhere."""
    plt = pyplot()
    rows = [(label, cells[OVERALL]) for label, _m, cells in g.rows() if OVERALL in cells]
    fig, ax = plt.subplots(figsize=(6.0, 0.5 * len(rows) + 1.2))
    labels = [r[0] for r in rows]
    draft = [r[1].draft_share for r in rows]
    verify = [r[1].verify_share for r in rows]
    other = [max(0.0, 1.0 - d - v) for d, v in zip(draft, verify)]
    ax.barh(labels, verify, label="verify (target forward)")
    ax.barh(labels, draft, left=verify, label="draft")
    ax.barh(labels, other, left=[v + d for v, d in zip(verify, draft)], label="other")
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of wall time")
    ax.set_title("Draft / verify time breakdown")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.invert_yaxis()
    return to_data_uri(fig)


def profile_curve(profile: dict[str, Any]) -> str:
    """T(n) in ms (log-log) for n new tokens after the profile's context length."""
    plt = pyplot()
    curves = {name: b["latency_s"] for name, b in (profile.get("backends") or {}).items()}
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    for name, curve in (curves or {"": profile["latency_s"]}).items():
        pts = sorted((int(k), float(v)) for k, v in curve.items())
        ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], marker="o", label=name or None)
    floor = (profile.get("bandwidth_floor") or {}).get("floor_s")
    if floor:
        ax.axhline(floor * 1e3, color="grey", linestyle="--", linewidth=1, label="bandwidth floor")
    if curves or floor:
        ax.legend(fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("new tokens per forward (n)")
    ax.set_ylabel("T(n) ms")
    ax.set_title(f"Forward latency after {profile.get('context_len', '?')} cached tokens")
    ax.grid(True, which="both", linewidth=0.3)
    return to_data_uri(fig)


def accepted_histograms(g: Group) -> str:
    """Grouped bars: share of drafted steps accepting k draft tokens (x = k, last bar = 8+), per method."""
    plt = pyplot()
    rows = drafting_rows(g.rows())
    width_k = max([len(c.acceptance.histogram) - 1 for _, c in rows] + [1])
    width_k = min(MAX_DEPTH_COLUMNS, width_k)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * (width_k + 1) * max(len(rows), 1) ** 0.5 + 3), 3.6))
    bar = 0.8 / max(len(rows), 1)
    for i, (label, c) in enumerate(rows):
        shares = pooled_shares(c.acceptance.histogram_shares(), width_k)
        ax.bar([k - 0.4 + bar * (i + 0.5) for k in range(width_k + 1)], shares, bar, label=label)
    ticks = [str(k) for k in range(width_k)] + [f"{width_k}+" if width_k == MAX_DEPTH_COLUMNS else str(width_k)]
    ax.set_xticks(range(width_k + 1), ticks)
    ax.set_xlabel("accepted draft tokens in a step")
    ax.set_ylabel("share of drafted steps")
    ax.set_title("Accepted-length histogram")
    if rows:
        ax.legend(fontsize=8)
    return to_data_uri(fig)


MIN_PLOTTED_STEPS = 10


def per_position_acceptance(g: Group) -> str:
    """P(accept depth i | depth i-1 accepted) against depth i, one line per method; depths reached by
    fewer than ``MIN_PLOTTED_STEPS`` steps are left out (a share of 1 or 2 steps is noise)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    for label, c in drafting_rows(g.rows()):
        pos, reached = c.acceptance.per_position or [], c.acceptance.reached or []
        pts = [(i + 1, p) for i, (p, n) in enumerate(zip(pos, reached)) if p is not None and n >= MIN_PLOTTED_STEPS]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{label} ({c.acceptance.shape})")
    ax.set_ylim(0, 1.05)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("draft depth i")
    ax.set_ylabel("P(accept i | i-1 accepted)")
    ax.set_title(f"Per-position acceptance (depths reached by >= {MIN_PLOTTED_STEPS} steps)")
    ax.grid(True, linewidth=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    return to_data_uri(fig)

