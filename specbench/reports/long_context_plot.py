"""The figure of speedups against input length (``long_context.png`` beside a run's ``report.md``).

One column per entropy tier; the top row is each method's speedup vs AR against the input length
(solid: end to end with its 95% CI as bars; dashed: decode only, prefill excluded), the bottom row its
tau. Lengths are on a log2 axis labelled as asked (``1k`` ... ``8k``). Drawn with matplotlib's Agg backend
(no display), from the same cells as the tables.
"""
from __future__ import annotations

import io
from pathlib import Path

from specbench.catalog import BASELINE
from specbench.config.context_length import length_label
from specbench.errors import WriteError, writing
from specbench.reports.leaderboard.plots import pyplot
from specbench.reports.long_context import Stats, decode_speedup
from specbench.results.context_lengths import LengthGroup

PLOT_FILE = "long_context.png"


def method_colours(plt, n: int) -> list:
    """``n`` distinct line colours: matplotlib's default cycle, or tab20 past its 10 (a run with five methods
    and their ``@auto`` twins plus AR has 11 lines, and the 11th would repeat AR's blue)."""
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return list(cycle) if n <= len(cycle) else list(plt.get_cmap("tab20").colors)[:max(n, 1)]


def length_figure(groups: list[LengthGroup], methods: list[str], stats: Stats) -> bytes:
    """PNG bytes of the figure (see the module docstring)."""
    plt = pyplot()
    tiers = list(dict.fromkeys(g.tier for g in groups))
    fig, axes = plt.subplots(2, len(tiers), figsize=(4.2 * len(tiers), 6.0), squeeze=False, sharex="col")
    colours = method_colours(plt, len(methods))
    for col, tier in enumerate(tiers):
        rows = [g for g in groups if g.tier == tier]
        xs = [g.length for g in rows]
        top, bottom = axes[0][col], axes[1][col]
        for i, m in enumerate(methods):
            colour = colours[i % len(colours)]
            cells = [stats.get(m, {}).get(g.subtask) for g in rows]
            taus = [(x, c.tau) for x, c in zip(xs, cells) if c is not None]
            if taus:
                bottom.plot(*zip(*taus), marker="o", color=colour, label=m)
            if m == BASELINE:
                continue
            ends = [(x, c) for x, c in zip(xs, cells) if c is not None and c.speedup is not None]
            if ends:
                lo = [c.speedup - c.ci_low if c.ci_low is not None else 0.0 for _, c in ends]
                hi = [c.ci_high - c.speedup if c.ci_high is not None else 0.0 for _, c in ends]
                top.errorbar([x for x, _ in ends], [c.speedup for _, c in ends], yerr=[lo, hi], marker="o",
                             capsize=2, color=colour, label=m)
            dec = [(x, decode_speedup(stats, m, g)) for x, g in zip(xs, rows)]
            dec = [(x, v) for x, v in dec if v is not None]
            if dec:
                top.plot(*zip(*dec), linestyle="--", marker=".", color=colour)
        top.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
        top.set_title(f"{tier}: speedup vs AR (dashed: decode only)", fontsize=9)
        bottom.set_title(f"{tier}: tau", fontsize=9)
        bottom.set_xlabel("input length (tokens)")
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [length_label(x) for x in xs])
            ax.minorticks_off()
    axes[0][0].set_ylabel("speedup (x)")
    axes[1][0].set_ylabel("tokens per forward")
    axes[1][0].legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def write_length_figure(folder: Path, groups: list[LengthGroup], methods: list[str], stats: Stats) -> bool:
    """Write ``long_context.png`` into ``folder`` (atomically); False, said on stderr, when it cannot be written."""
    import sys

    path = folder / PLOT_FILE
    tmp = path.with_name(f".{PLOT_FILE}.tmp")
    try:
        with writing(path):
            tmp.write_bytes(length_figure(groups, methods, stats))
            tmp.replace(path)
        return True
    except WriteError as e:
        print(f"[specbench] could not write {PLOT_FILE} ({str(e).split(' while writing')[0]})", file=sys.stderr)
        return False
    finally:
        tmp.unlink(missing_ok=True)
