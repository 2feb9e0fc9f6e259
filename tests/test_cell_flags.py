"""Flags follow the figure (issue 85, defect 5): the reasons a figure is not a plain measurement (stalled,
implausible, partial, forced merge, machine not idle, sampled) travel with a run's cells into ``report``,
``summary.json``, ``compare``, the leaderboard (md and html) and ``project``, by one rule (``results.cell_flags``).

The defects: a run ``check`` fails for a stall was ranked on the leaderboard and shown by ``compare`` and ``project``
unmarked; ``project`` showed a measured cell ``compare`` marks implausible without the mark; a partial run (3 of 4
records) was compared, put on the leaderboard and projected with no note. The runs here are constructed.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from fault_helpers import cli_out
from specbench.reports.leaderboard.build import build_leaderboard
from specbench.reports.projection_output import projection_text
from specbench.reports.projection_table import build_projection, onto_profile
from test_projection import A, B, profile_of, run_on
from test_stats import write_fake_run


def rewrite(run: Path, edit) -> Path:
    """``records.jsonl`` with ``edit(record)`` applied to each record (None drops it)."""
    recs = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    out = [r for r in (edit(dict(r)) for r in recs) if r is not None]
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out))
    return run


def small_stall(rec: dict) -> dict:
    """AR's first GSM8K question stopped 1.5 s in one step: stalled, but not enough for the speedup to be implausible."""
    if rec["method"] == "ar" and rec["question_id"] == "gsm8k-0":
        rec["step_times_s"][3] += 1.5
        rec["wall_time_s"] += 1.5
    return rec


@pytest.fixture
def runs(tmp_path) -> dict[str, Path]:
    fake = dict(methods={"pld": 1.5}, tasks=("gsm8k", "humaneval"), n_questions=4)
    clean = write_fake_run(tmp_path / "clean", **fake)
    stalled = rewrite(write_fake_run(tmp_path / "stalled", **fake), small_stall)
    partial = rewrite(write_fake_run(tmp_path / "partial", **fake),
                      lambda r: None if (r["method"], r["question_id"]) == ("pld", "gsm8k-3") else r)
    return {"clean": clean, "stalled": stalled, "partial": partial}


def pld_line(text: str, start: str = "| GSM8K") -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_check_fails_the_stall_but_the_cell_is_plausible(runs, capsys):
    code, out, _ = cli_out(["check", str(runs["stalled"]), "--ids"], capsys)
    assert code == 1 and "STALLED ar gsm8k/gsm8k-0" in out and " 0 implausible" in out, out


def test_compare_marks_stalled_and_partial_cells_and_says_why(runs, capsys):
    code, out, _ = cli_out(["compare", str(runs["clean"]), str(runs["stalled"]), str(runs["partial"]),
                            "--bootstrap", "50"], capsys)
    assert code == 0, out
    table = out.split("pld: speedup vs ar on each run")[1]
    gsm8k = pld_line(table)
    assert gsm8k.count("(stalled)") == 1 and gsm8k.count("(partial)") == 1, gsm8k
    humaneval = pld_line(table, "| HumanEval")
    assert "(stalled)" not in humaneval and humaneval.count("(partial)") == 1, humaneval  # (a run-wide flag)
    assert "stalled: ar gsm8k/gsm8k-0 turn 1 repeat 0: one decode step took" in out
    assert "partial: partial holds 15 of 16 planned records" in out


def test_leaderboard_marks_them_in_md_and_html(runs, tmp_path):
    built = build_leaderboard([runs["clean"], runs["stalled"], runs["partial"]], tmp_path / "lb", n_boot=50,
                              plots=False)
    text = built["markdown"].read_text()
    assert "(stalled)" in text and "(partial)" in text and "stalled: ar gsm8k/gsm8k-0" in text
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert "(stalled)" in html and "(partial)" in html and "partial holds 15 of 16 planned records" in html


def test_report_and_summary_carry_the_flags(runs, capsys):
    assert cli_out(["report", str(runs["stalled"])], capsys)[0] == 0
    report = (runs["stalled"] / "report.md").read_text()
    assert "(stalled)" in pld_line(report, "| pld")
    summary = json.loads((runs["stalled"] / "summary.json").read_text())
    pld = next(m for m in summary["methods"] if m["method"] == "pld")
    assert pld["subtasks"]["GSM8K"]["flags"] == ["stalled"] and pld["subtasks"]["HumanEval"]["flags"] == []
    assert any(n.startswith("stalled: ar gsm8k/gsm8k-0") for n in summary["flags"])


def stalled_ar(run):
    """AR's first record stopped 2 s (its process ran 0.1 CPU s in it)."""
    first = run.records[0]
    assert first.method == "ar"
    run.records[0] = dataclasses.replace(first, wall_time_s=first.wall_time_s + 2.0, cpu_time_s=0.1)
    return run


def test_project_marks_the_measured_cell_stalled_and_implausible():
    proj = build_projection(stalled_ar(run_on(A)), [onto_profile("b.json", profile_of(B))])
    text = projection_text(proj)
    row = next(line for line in text.splitlines() if line.startswith("| pld | GSM8K"))
    assert "(stalled)" in row and "(implausible)" in row, row  # AR's 2 s make pld read above its tau
    assert "stalled: ar gsm8k/1" in text
    assert next(r for r in proj.rows if r.method == "pld").flags


def test_project_marks_a_partial_run(runs, tmp_path, capsys):
    run = run_on(A)
    run.manifest["partial"] = {"records": 7, "planned": 8, "running": [], "shards": ["s2: 3 of 4 planned records"]}
    text = projection_text(build_projection(run, [onto_profile("b.json", profile_of(B))]))
    assert "(partial)" in next(line for line in text.splitlines() if line.startswith("| pld | GSM8K"))
    assert "merged from unfinished shards" in text
