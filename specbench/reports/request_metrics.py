"""The per-request acceptance and the latency percentiles in ``summary.csv`` and in one report table.

The figures are computed in ``specbench.results.request_acceptance`` (tau and vLLM's mean acceptance length per
request, per-position rates) and ``specbench.results.latency_percentiles`` (TPOT, ITL, E2E); this module only lays
them out. The CSV gets flat columns (``REQUEST_COLUMNS``, after the older ones); the per-position rates are a list
and stay in ``summary.json``. The report table shows each method's Overall cell:

``pld | 12 | 1.61 | 1.55 [1.21, 2.02] | 2.40 | 2.31 | 2.25 [1.60, 3.10] | 0.61 / 0.41 / 0.27 / 0.18 | ...``

>>> request_columns({"per_request": {"pooled_mean_acceptance_length": 2.4, "drafts": 5, "drafting_requests": 2,
...     "mean_acceptance_length": {"median": 2.5}, "tau": {"mean": 2.1}},
...     "latency_percentiles": {"tpot_s": {"p95": 0.01}}})["mean_acceptance_length_request_median"]
2.5
>>> slash([0.61, None, 0.27], "{:.2f}")
'0.61 / - / 0.27'
"""
from __future__ import annotations

from typing import Any, Sequence

from specbench.catalog import OVERALL
from specbench.reports.numfmt import fmt_num
from specbench.reports.table import Table
from specbench.results.request_acceptance import SPREAD_PERCENTILES, Spread
from specbench.results.stats import Cell

STATS = ("mean", "median", *(f"p{p}" for p in SPREAD_PERCENTILES))
LATENCIES = ("tpot", "itl", "e2e")
PCTS = ("p50", "p95", "p99")
POSITIONS = 4  # draft positions shown in the report (summary.json has them all)
REQUEST_COLUMNS = (
    "drafting_requests", "drafts", "mean_acceptance_length_pooled",
    *(f"mean_acceptance_length_request_{s}" for s in STATS), *(f"tau_request_{s}" for s in STATS),
    *(f"{lat}_{p}_s" for lat in LATENCIES for p in PCTS),
)


def request_columns(cell: dict[str, Any]) -> dict[str, Any]:
    """The ``REQUEST_COLUMNS`` of one ``summary.json`` cell (None where it has no such figure)."""
    req = cell.get("per_request") or {}
    pct = cell.get("latency_percentiles") or {}
    out: dict[str, Any] = {"drafting_requests": req.get("drafting_requests"), "drafts": req.get("drafts"),
                           "mean_acceptance_length_pooled": req.get("pooled_mean_acceptance_length")}
    for name, key in (("mean_acceptance_length_request", "mean_acceptance_length"), ("tau_request", "tau")):
        out.update({f"{name}_{s}": (req.get(key) or {}).get(s) for s in STATS})
    out.update({f"{lat}_{p}_s": (pct.get(f"{lat}_s") or {}).get(p) for lat in LATENCIES for p in PCTS})
    return out


def slash(values: Sequence[float | None], fmt: str) -> str:
    """``a / b / c``, ``-`` for each missing value."""
    return " / ".join(fmt_num(v, fmt) for v in values)


def _spread_text(s: Spread) -> str:
    """``median [p10, p90]``."""
    if s.median is None:
        return "-"
    return f"{s.median:.2f} [{s.percentiles['p10']:.2f}, {s.percentiles['p90']:.2f}]"


def request_metrics_table(rows: Sequence[tuple[str, str, dict[str, Cell]]]) -> Table | None:
    """Overall per method: tau and vLLM's mean acceptance length pooled and per request, the share of drafts
    accepting positions 1-4, and TPOT / ITL (ms) and E2E (s) at p50 / p95 / p99 (None without any record)."""
    out, keys = [], []
    for label, _method, cells in rows:
        c = cells.get(OVERALL)
        if c is None:
            continue
        req, lat = c.requests, c.percentiles
        mal = req.mean_acceptance_length
        pos = (list(req.position_rates) + [None] * POSITIONS)[:POSITIONS]  # (empty without drafts: all None)
        ms = [[None if v is None else v * 1e3 for v in (d[p] for p in PCTS)] for d in (lat.tpot_s, lat.itl_s)]
        out.append([label, str(req.requests), fmt_num(c.tau), _spread_text(req.tau),
                    fmt_num(req.pooled_mean_acceptance_length), fmt_num(mal.mean), _spread_text(mal),
                    slash(pos, "{:.2f}"), slash(ms[0], "{:.1f}"), slash(ms[1], "{:.1f}"),
                    slash([lat.e2e_s[p] for p in PCTS], "{:.2f}")])
        keys.append([label, req.requests, c.tau, req.tau.median, req.pooled_mean_acceptance_length, mal.mean,
                     mal.median, pos[0], ms[0][0], ms[1][0], lat.e2e_s["p50"]])
    if not out:
        return None
    headers = ["Method", "requests", "tau pooled", "tau per request: median [p10, p90]",
               "vLLM mean acc. length pooled", "vLLM per request: mean", "vLLM per request: median [p10, p90]",
               f"accepted at position 1-{POSITIONS} (share of drafts)", "TPOT ms p50/p95/p99", "ITL ms p50/p95/p99",
               "E2E s p50/p95/p99"]
    title = ("Acceptance per request and latency percentiles (all subtasks pooled; tau = tokens / forward passes, "
             "vLLM's mean acceptance length = 1 + accepted / drafting steps; ITL = the gap between a request's "
             "decode steps; see docs/how-it-measures.md)")
    return Table(title, headers, out, keys)
