"""The metric tables shared by ``report`` and the leaderboard: latency and memory, per-position
acceptance, the accepted-length distribution, decode-only throughput and MT-Bench categories.

Every builder takes rows ``(label, method, cells)`` (cells: ``{subtask | "Overall" | category: Cell}``)
and returns a ``Table`` (display strings + sort keys), or None when no row has anything to show.

>>> fmt_bytes(3 * 2**20), fmt_bytes(None), fmt_count(28_311_552)
('3.0 MiB', '-', '28.3M')
"""
from __future__ import annotations

from typing import Any, Sequence

from specbench.catalog import BASELINE, OVERALL
from specbench.reports.numfmt import fmt_num
from specbench.reports.table import Table
from specbench.results.stats import Cell

Row = tuple[str, str, dict[str, Cell]]
MAX_DEPTH_COLUMNS = 8  # deeper positions / longer acceptances are pooled into the last column


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def fmt_count(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)


def _ms(seconds: float | None) -> str:
    return fmt_num(None if seconds is None else seconds * 1e3, "{:.1f}")


def latency_table(rows: Sequence[Row], overheads: dict[str, dict[str, Any]]) -> Table:
    """Overall TTFT, decode-only tokens/s, per-token latency percentiles, peak memory and overhead."""
    headers = ["Method", "TTFT ms mean", "TTFT ms p50", "decode tok/s", "ms/token p50", "ms/token p90",
               "ms/token p99", "peak memory", "storage", "parameters"]
    out, keys = [], []
    for label, method, cells in rows:
        c = cells.get(OVERALL)
        if c is None:
            continue
        lat, ov = c.latency, overheads.get(label) or {}
        pct = [lat.token_latency_s.get(p) for p in ("p50", "p90", "p99")]
        out.append([label, _ms(lat.ttft_mean_s), _ms(lat.ttft_p50_s), fmt_num(lat.decode_tokens_per_s, "{:.1f}"),
                    *map(_ms, pct), fmt_bytes(c.peak_memory_bytes), fmt_bytes(ov.get("storage_bytes")),
                    fmt_count(ov.get("parameters"))])
        keys.append([label, lat.ttft_mean_s, lat.ttft_p50_s, lat.decode_tokens_per_s, *pct, c.peak_memory_bytes,
                     ov.get("storage_bytes"), ov.get("parameters")])
    title = ("Latency and memory (all subtasks pooled; ms/token = a step's time / the tokens it emitted; "
             "storage, parameters: the method's declared overhead)")
    return Table(title, headers, out, keys)


def decode_throughput_table(rows: Sequence[Row], subtasks: list[str]) -> Table:
    """Decode-only tokens/s (after the first token) per subtask."""
    cols = [*subtasks, OVERALL]
    out, keys = [], []
    for label, _method, cells in rows:
        vals = [cells[s].latency.decode_tokens_per_s if s in cells else None for s in cols]
        out.append([label, *(fmt_num(v, "{:.1f}") for v in vals)])
        keys.append([label, *vals])
    return Table("Decode-only tokens per second (prefill excluded)", ["Method", *cols], out, keys)


def drafting_rows(rows: Sequence[Row]) -> list[tuple[str, Cell]]:
    """(label, Overall cell) of the rows that verified at least one draft."""
    return [(label, cells[OVERALL]) for label, method, cells in rows
            if method != BASELINE and OVERALL in cells and cells[OVERALL].acceptance.drafted_steps]


def position_table(rows: Sequence[Row]) -> Table | None:
    """P(accept depth i | depth i-1 accepted) per method (Overall), depths 1..8."""
    drafting = drafting_rows(rows)
    if not drafting:
        return None
    depth = min(MAX_DEPTH_COLUMNS, max(len(c.acceptance.per_position or []) for _, c in drafting) or 1)
    headers = ["Method", "draft shape", "drafted steps", *(f"depth {i}" for i in range(1, depth + 1))]
    out, keys = [], []
    for label, c in drafting:
        pos = list(c.acceptance.per_position or [])[:depth]
        pos += [None] * (depth - len(pos))
        reached = list(c.acceptance.reached or [])[:depth]
        reached += [0] * (depth - len(reached))
        cells = [fmt_num(p) if p is None else f"{p:.2f} ({n})" for p, n in zip(pos, reached)]
        out.append([label, c.acceptance.shape, str(c.acceptance.drafted_steps), *cells])
        keys.append([label, c.acceptance.shape, c.acceptance.drafted_steps, *pos])
    return Table("Per-position acceptance: P(accept depth i | depth i-1 accepted, draft reaches i) (steps)",
                 headers, out, keys)


def histogram_table(rows: Sequence[Row]) -> Table | None:
    """Share of drafted steps that accepted exactly k draft tokens (k = 0..8, the last column is 8+)."""
    drafting = drafting_rows(rows)
    if not drafting:
        return None
    width = min(MAX_DEPTH_COLUMNS, max(len(c.acceptance.histogram) - 1 for _, c in drafting))
    headers = ["Method", "drafted steps", *(str(k) for k in range(width)), f"{width}+" if width == MAX_DEPTH_COLUMNS else str(width)]
    out, keys = [], []
    for label, c in drafting:
        shares = pooled_shares(c.acceptance.histogram_shares(), width)
        out.append([label, str(c.acceptance.drafted_steps), *(fmt_num(s, "{:.0%}") for s in shares)])
        keys.append([label, c.acceptance.drafted_steps, *shares])
    return Table("Accepted draft tokens per drafted step (share of steps)", headers, out, keys)


def pooled_shares(shares: list[float], width: int) -> list[float]:
    """``shares`` padded to ``width + 1`` entries with everything from ``width`` on summed into the last.

    >>> pooled_shares([0.5, 0.25, 0.125, 0.125], 2)
    [0.5, 0.25, 0.25]
    """
    padded = shares + [0.0] * (width + 1 - len(shares))
    return padded[:width] + [sum(padded[width:])]


def text_histograms(rows: Sequence[Row], bar_width: int = 30) -> str:
    """The accepted-length histogram of each drafting method as text bars (terminal and report.md)."""
    blocks = []
    for label, c in drafting_rows(rows):
        shares = pooled_shares(c.acceptance.histogram_shares(), min(MAX_DEPTH_COLUMNS, len(c.acceptance.histogram) - 1))
        lines = [f"{label} ({c.acceptance.drafted_steps} drafted steps)"]
        for k, s in enumerate(shares):
            tag = f"{k}+" if k == MAX_DEPTH_COLUMNS else str(k)
            lines.append(f"  {tag:>3} | {'#' * round(s * bar_width):<{bar_width}} {s:6.1%}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def category_table(rows: Sequence[Row], categories: list[str], title: str = "MT-Bench speedup per category") -> Table | None:
    """Speedup ±CI per category (rows' cells keyed by category)."""
    if not categories:
        return None
    out, keys = [], []
    for label, method, cells in rows:
        out.append([label, *(cells[c].speedup_text() if c in cells else "-" for c in categories)])
        keys.append([label, *((1.0 if method == BASELINE else cells[c].speedup) if c in cells else None for c in categories)])
    return Table(title, ["Method", *categories], out, keys)
