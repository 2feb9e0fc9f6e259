"""The plausibility rule (issue 74, item 1): a speedup above what tau allows, beyond the margin and the run's
noise floor, is marked implausible with a one-line reason by ``report`` (report.md), ``summary.json``,
``compare``, ``leaderboard`` and ``check`` (exit 1); honest runs, drift included, are not flagged.

The defect as the issue saw it: AR's generation of one question stopped for 20 s made ``pld`` read 8.10x at
tau 1.00, and ``check`` said OK. Here the stop is written into a fabricated run (one AR decode step 20 s longer);
``test_stall_sigstop.py`` makes it with a real SIGSTOP.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace as C

import pytest

from fault_helpers import cli_out
from specbench.reports.leaderboard.build import build_leaderboard
from specbench.results.loaded_run import load_run
from specbench.results.plausibility import MARGIN, judge
from specbench.results.stats import run_stats
from test_stats import write_fake_run

STOP_S = 20.0


def stall_ar(run: Path, question: str = "gsm8k-0", seconds: float = STOP_S) -> Path:
    """Make AR's generation of ``question`` take ``seconds`` longer in one decode step, as a stopped process's does."""
    lines = (run / "records.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if rec["method"] == "ar" and rec["question_id"] == question:
            rec["step_times_s"][3] += seconds
            rec["wall_time_s"] += seconds
            lines[i] = json.dumps(rec)
    (run / "records.jsonl").write_text("".join(line + "\n" for line in lines))
    return run


@pytest.fixture
def stalled_run(tmp_path) -> Path:
    """AR, ``pld`` at tau 1.00 (half AR's speed) and ``sps`` at tau 2.9, on GSM8K and HumanEval; AR stopped 20 s on
    one GSM8K question."""
    run = write_fake_run(tmp_path / "stalled", {"pld": 0.5, "sps": 1.5}, tasks=("gsm8k", "humaneval"), n_questions=4)
    return stall_ar(run)


def test_report_marks_the_cells_and_says_why(stalled_run, capsys):
    assert cli_out(["report", str(stalled_run)], capsys)[0] == 0
    text = (stalled_run / "report.md").read_text()
    assert "Plausibility: 6 cells checked, 4 implausible" in text
    pld = next(line for line in text.splitlines() if line.startswith("| pld"))
    assert pld.count(" (implausible)") == 2, pld  # GSM8K and Overall; HumanEval holds
    reason = next(line for line in text.splitlines() if line.startswith("- pld on GSM8K:"))
    assert "at tau 1.00 exceeds the most tau allows (1.00x + 25% margin = 1.25x" in reason
    assert "the baseline was slowed or the method's time is wrong" in reason
    assert "### Stalled generations" in text and "- ar gsm8k/gsm8k-0 turn 1 repeat 0: one decode step took 20." in text
    assert "touches every method's GSM8K and Overall speedups" in text


def test_summary_json_carries_the_verdicts(stalled_run, capsys):
    assert cli_out(["report", str(stalled_run)], capsys)[0] == 0
    summary = json.loads((stalled_run / "summary.json").read_text())
    pld = next(m for m in summary["methods"] if m["method"] == "pld")
    assert pld["subtasks"]["GSM8K"]["implausible"].startswith("pld on GSM8K: ")
    assert pld["subtasks"]["GSM8K"]["tau_ceiling"] == pytest.approx(1.0)
    assert pld["subtasks"]["HumanEval"]["implausible"] is None
    assert summary["plausibility"]["cells_checked"] == 6 and summary["plausibility"]["implausible"] == 4
    assert len(summary["plausibility"]["stalled"]) == 1
    assert "implausible" in (stalled_run / "summary.csv").read_text().splitlines()[0]


def test_check_fails_naming_each_implausible_cell(stalled_run, capsys):
    code, out, _ = cli_out(["check", str(stalled_run), "--ids"], capsys)
    assert code == 1, out
    assert "IMPLAUSIBLE pld on GSM8K: " in out and "IMPLAUSIBLE sps on Overall: " in out
    assert "STALLED ar gsm8k/gsm8k-0 turn 1 repeat 0" in out
    assert "plausibility: 6 cells checked, 4 implausible; 1 stalled generation" in out
    assert out.strip().splitlines()[-1].startswith("FAIL: 4 implausible cell(s), 1 stalled generation(s)")


def test_compare_and_leaderboard_mark_and_explain(stalled_run, tmp_path, capsys):
    twin = tmp_path / "twin"
    shutil.copytree(stalled_run, twin)
    code, out, _ = cli_out(["compare", str(stalled_run), str(twin), "--bootstrap", "50"], capsys)
    assert code == 0 and "(implausible)" in out
    assert "Implausible speedups" in out and "- stalled: pld on GSM8K: " in out and "- twin: pld on GSM8K: " in out
    text = build_leaderboard([stalled_run], tmp_path / "lb", n_boot=50, plots=False)["markdown"].read_text()
    assert "(implausible)" in text and "- stalled: sps on GSM8K: " in text
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert "Implausible speedups" in html and "sps on GSM8K: " in html


def test_honest_run_is_not_flagged_and_says_how_many_cells(tmp_path, capsys):
    """Per-question drift of +-10% (AR) and +-5% (methods): no false alarm, and the count is said."""
    run = write_fake_run(tmp_path / "quiet", {"pld": 0.5, "sps": 1.5, "rest": 2.0}, n_questions=6, seed=3)
    assert cli_out(["report", str(run)], capsys)[0] == 0
    assert "Plausibility: 12 cells checked, 0 implausible" in (run / "report.md").read_text()
    assert " (implausible) " not in (run / "report.md").read_text() and "±" in (run / "report.md").read_text()
    code, out, _ = cli_out(["check", str(run), "--ids"], capsys)
    assert code == 0 and "plausibility: 12 cells checked, 0 implausible; 0 stalled generations" in out, out


def _cells(speedup: float, wall: float = 10.0, twin: float | None = None) -> dict:
    stats = {"ar": {"GSM8K": C(speedup=None, tau=1.0, tau_ceiling=None, wall_time_s=wall)},
             "pld": {"GSM8K": C(speedup=speedup, tau=1.0, tau_ceiling=1.0, wall_time_s=wall)}}
    if twin is not None:
        stats["ar@twin"] = {"GSM8K": C(speedup=twin, tau=1.0, tau_ceiling=1.0, wall_time_s=wall)}
    return stats


def test_noise_allowance():
    """Within the margin: plausible; past it: implausible; a twin row's drift widens the margin (capped)."""
    def flagged(stats: dict) -> bool:
        judge(stats)
        return stats["pld"]["GSM8K"].implausible is not None

    assert not flagged(_cells(1.0 + MARGIN - 0.01)) and flagged(_cells(1.0 + MARGIN + 0.05))
    assert not flagged(_cells(1.40, twin=1.20))  # a run whose AR timed twice differs by 20%: 45% allowed
    assert flagged(_cells(1.60, twin=1.90))  # a stalled twin widens it by 25% at most, not 90%
    # the excess must amount to half a second of AR time: a 50 ms generation's scheduling jitter is no finding
    assert not flagged(_cells(2.0, wall=0.05)) and flagged(_cells(2.0, wall=1.0))


def test_run_stats_judges_the_real_cells(stalled_run):
    st = run_stats(load_run(stalled_run), n_boot=0)
    assert st["pld"]["GSM8K"].tau == 1.0 and st["pld"]["GSM8K"].speedup > 7
    assert st["pld"]["HumanEval"].implausible is None and st["sps"]["HumanEval"].implausible is None
    assert st["ar"]["GSM8K"].implausible is None
