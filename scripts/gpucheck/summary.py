"""Step results and the check's summary: ``summary.json`` (everything) and ``summary.md`` (the tables).

A step's result is ``{"name", "status", "seconds", "figures", "error"}`` with status ``passed``, ``failed``
(a MISMATCH or a check that did not hold), ``crashed`` (an exception: its last line is the error),
``stopped`` (its time budget ran out before it finished: what ran is reported) or ``skipped``.

>>> exit_status([{"status": "passed"}, {"status": "stopped"}]), exit_status([{"status": "crashed"}])
(0, 1)
"""
from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any, Callable

FAILING = ("failed", "crashed")


def run_step(name: str, body: Callable[[], tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Run ``body`` (returning (status, figures)); an exception is recorded as ``crashed``, never raised."""
    start = time.monotonic()
    print(f"[gpu-check] {name} ...", flush=True)
    try:
        status, figures = body()
        error = figures.pop("error", None)
    except Exception as e:  # noqa: BLE001 - a crashing step is recorded and the check goes on
        status, figures = "crashed", {"traceback": traceback.format_exc().splitlines()[-12:]}
        error = f"{type(e).__name__}: {e}".splitlines()[0]
    seconds = round(time.monotonic() - start, 1)
    print(f"[gpu-check] {name}: {status} in {seconds} s" + (f" ({error})" if error else ""), flush=True)
    return {"name": name, "status": status, "seconds": seconds, "figures": figures, "error": error}


def exit_status(steps: list[dict[str, Any]]) -> int:
    """1 when any step failed or crashed, else 0."""
    return int(any(s["status"] in FAILING for s in steps))


def write_summary(out: Path, header: dict[str, Any], steps: list[dict[str, Any]]) -> Path:
    """Write ``summary.json`` and ``summary.md`` into ``out``; returns the markdown file."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps({**header, "steps": steps, "exit": exit_status(steps)}, indent=1))
    md = out / "summary.md"
    md.write_text("\n".join(markdown(header, steps)) + "\n")
    return md


def markdown(header: dict[str, Any], steps: list[dict[str, Any]]) -> list[str]:
    """The summary's lines: the setting, a line per step, the exactness and cost-profile tables."""
    lines = ["# GPU check", "", *(f"- {k}: {v}" for k, v in header.items()), "",
             "| step | status | seconds | note |", "|---|---|---|---|"]
    lines += [f"| {s['name']} | {s['status']} | {s['seconds']} | {s['error'] or ''} |" for s in steps]
    for s in steps:
        if s["name"] == "exactness" and s["figures"].get("cells"):
            lines += ["", *exactness_table(s["figures"]["cells"])]
        if s["name"] == "cost profile" and s["figures"].get("ratio"):
            lines += ["", *ratio_table(s["figures"]["ratio"])]
        if s["name"] == "device profile" and s["figures"].get("dtypes"):
            lines += ["", *device_table(s["figures"])]
        if s["name"] == "first visit" and s["figures"].get("rows"):
            lines += ["", *visit_table(s["figures"]["rows"])]
        shown = {k: v for k, v in s["figures"].items() if k != "traceback"}
        if s["name"] == "cli" and shown:
            lines += ["", "CLI run: " + ", ".join(f"{k}={v}" for k, v in shown.items())]
    return lines


def exactness_table(cells: list[dict[str, Any]]) -> list[str]:
    """Per method, per dtype: ties / MISMATCH summed over the families run (and the records checked)."""
    dtypes = list(dict.fromkeys(c["dtype"] for c in cells))
    methods = sorted({m for c in cells for m in c["methods"]})
    lines = ["Exactness (ties / MISMATCH of records checked, over the families run)", "",
             "| method | " + " | ".join(dtypes) + " |", "|---" * (len(dtypes) + 1) + "|"]
    for m in methods:
        row = []
        for d in dtypes:
            got = [c["methods"][m] for c in cells if c["dtype"] == d and m in c["methods"]]
            n = sum(sum(g.values()) for g in got)
            row.append(f"{sum(g['tie'] for g in got)} / {sum(g['MISMATCH'] for g in got)} of {n}" if got else "-")
        lines.append(f"| {m} | " + " | ".join(row) + " |")
    return lines


def ratio_table(ratio: dict[str, dict[str, float]]) -> list[str]:
    """T(n)/T(1) per context (rows) and size (columns)."""
    sizes = list(next(iter(ratio.values())))
    return ["Cost profile T(n)/T(1)", "", "| context | " + " | ".join(f"n={n}" for n in sizes) + " |",
            "|---" * (len(sizes) + 1) + "|",
            *(f"| {c} | " + " | ".join(str(r.get(n, "-")) for n in sizes) + " |" for c, r in ratio.items())]


def device_table(figures: dict[str, Any]) -> list[str]:
    """The embedded shape's T(1) per context and the drafters profiled, per dtype, and the files written.

    >>> device_table({"files": ["device-profile-embedded.json"], "dtypes": {"float32": {
    ...     "t1_ms": {"128": 9.1}, "prefill_ms": {"16": 9.8}, "drafters": ["eagle", "sps"]}}})[-1]
    '| float32 | 128: 9.1 | 16: 9.8 | eagle, sps |'
    """
    def pairs(d: dict[str, float]) -> str:
        return ", ".join(f"{k}: {v}" for k, v in d.items())

    return [f"Device profile of the embedded model's shape (random weights; ms): {', '.join(figures['files'])}", "",
            "| dtype | T(1) after context | prefill by prompt tokens | drafters |", "|---|---|---|---|",
            *(f"| {d} | {pairs(f['t1_ms'])} | {pairs(f['prefill_ms'])} | {', '.join(f['drafters'])} |"
              for d, f in figures["dtypes"].items())]


def visit_table(rows: list[dict[str, Any]]) -> list[str]:
    """AR's TTFT and median decode step, first visit -> second, per prompt length."""
    return ["First visit -> second (AR on the same prompt; ms)", "", "| prompt tokens | TTFT | decode step |",
            "|---|---|---|", *(f"| {r['prompt']} | {r['ttft_ms'][0]} -> {r['ttft_ms'][1]} | "
                                f"{r['step_ms'][0]} -> {r['step_ms'][1]} |" for r in rows)]
