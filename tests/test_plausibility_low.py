"""The plausibility rule's lower bound (issue 85, defect 14): a cell far below what its work allows is marked.

The defect: ``pld`` read 0.23x at tau 1.00, with the same passes as AR (nothing drafted) and 3 ms of drafting, and no
cell was flagged: the rule bounded speedups from above only. Here that cell is written into a fabricated run (its
time four times AR's, no stall the stall tests can see: no CPU time recorded, every step alike); the run's other
cells are honest slow cells (``pld`` at 0.5x that verifies three draft rows a pass) and must stay unflagged.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as C

import pytest

from fault_helpers import cli_out
from specbench.results.loaded_run import load_run
from specbench.results.plausibility import judge, speedup_floor
from specbench.results.stats import run_stats
from test_stats import write_fake_run


def slow_pld(run: Path, task: str = "gsm8k", speedup: float = 0.23) -> Path:
    """Make ``pld``'s records of ``task`` draft nothing (3 ms of drafting in all) and take AR's time / ``speedup``."""
    lines = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    ar = {(r["question_id"], r["turn"]): r["wall_time_s"] for r in lines if r["method"] == "ar"}
    for rec in lines:
        if rec["method"] == "pld" and rec["task"] == task:
            n = rec["forward_passes"] = len(rec["output_ids"])
            rec["accept_lengths"], rec["draft_sizes"], rec["draft_depths"] = [1] * n, [0] * n, [0] * n
            wall = ar[(rec["question_id"], rec["turn"])] / speedup
            rec["wall_time_s"], rec["draft_time_s"], rec["draft_times_s"] = wall, 0.003, [0.003 / n] * n
            rec["step_times_s"] = rec["verify_times_s"] = [wall / n] * n
            rec["prefill_time_s"] = wall / n
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return run


@pytest.fixture
def slow_run(tmp_path) -> Path:
    run = write_fake_run(tmp_path / "slow", {"pld": 0.5}, tasks=("gsm8k", "humaneval"), n_questions=4)
    return slow_pld(run)


def test_run_stats_marks_the_far_too_slow_cell_only(slow_run):
    st = run_stats(load_run(slow_run), n_boot=0)
    cell = st["pld"]["GSM8K"]
    assert cell.tau == 1.0 and cell.speedup == pytest.approx(0.23, rel=0.01)
    assert cell.speedup_floor == pytest.approx(1.0, abs=0.02)  # identical work, 3 ms of drafting: about 1x
    assert cell.implausible is not None and "below what its work allows" in cell.implausible
    assert st["pld"]["HumanEval"].implausible is None  # 0.5x verifying three draft rows a pass: explained


def test_check_and_report_flag_it(slow_run, capsys):
    code, out, _ = cli_out(["check", str(slow_run), "--ids"], capsys)
    assert code == 1, out
    assert "IMPLAUSIBLE pld on GSM8K: 0.23x at tau 1.00 is below what its work allows" in out
    assert "IMPLAUSIBLE pld on HumanEval" not in out
    assert cli_out(["report", str(slow_run)], capsys)[0] == 0
    pld = next(line for line in (slow_run / "report.md").read_text().splitlines() if line.startswith("| pld"))
    # GSM8K only: Overall pools it with HumanEval's draft rows, whose floor is lower
    assert "0.23x ±0.00 (implausible)" in pld and pld.count(" (implausible)") == 1, pld


def test_honest_slow_cells_are_not_flagged(tmp_path, capsys):
    """Methods that verify draft rows and time their drafting are slow for a reason: no false alarm."""
    run = write_fake_run(tmp_path / "quiet", {"pld": 0.5, "sps": 0.8, "rest": 2.0}, n_questions=6, seed=3)
    code, out, _ = cli_out(["check", str(run), "--ids"], capsys)
    assert code == 0 and "0 implausible" in out, out


def _cells(speedup: float, floor: float | None, wall: float = 10.0) -> dict:
    return {"pld": {"GSM8K": C(speedup=speedup, tau=1.0, tau_ceiling=1.0, speedup_floor=floor, wall_time_s=wall)}}


def test_lower_margin_and_seconds():
    def flagged(stats: dict) -> bool:
        judge(stats)
        return stats["pld"]["GSM8K"].implausible is not None

    assert flagged(_cells(0.23, 1.0)) and not flagged(_cells(0.6, 1.0))  # twice the time its work explains
    assert not flagged(_cells(0.23, None))  # no floor (a batch, an engine, records without draft sizes)
    assert not flagged(_cells(0.23, 1.0, wall=0.3))  # 0.2 s unexplained: scheduling noise, no finding


def test_floor_counts_draft_rows_and_drafting_time():
    def rec(passes: int, drafted: int, wall: float, draft: float = 0.0, method: str = "pld") -> C:
        return C(unit="u", new_tokens=10, forward_passes=passes, drafted=drafted, wall_time_s=wall,
                 draft_time_s=draft, draft_sizes=[0] * passes, aux_sizes=None, method=method, batch_size=None)
    ar = [C(unit="u", new_tokens=10, wall_time_s=1.0)]
    assert speedup_floor([rec(10, 0, 4.0)], ar) == pytest.approx(1.0)
    assert speedup_floor([rec(10, 10, 4.0)], ar) == pytest.approx(0.5)  # twice the rows
    assert speedup_floor([rec(10, 0, 4.0, draft=1.0)], ar) == pytest.approx(0.5)  # drafting doubles the time
    assert speedup_floor([rec(10, 0, 4.0, method="engine:ngram")], ar) is None  # its drafting is another process's
