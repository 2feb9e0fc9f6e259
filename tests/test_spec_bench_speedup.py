"""Spec-Bench's speedup definition (mean of per-question tokens/s over AR's, ``evaluation/speed.py`` at
fd2c1cd) beside specbench's pooled one: where they differ, and where a run meets the published table."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specbench.catalog import OVERALL, task_label
from specbench.cli import main
from specbench.interop.published import load_published, run_vs_published
from specbench.reports.report import render
from specbench.results.record import Record
from specbench.results.loaded_run import Run, load_run
from specbench.results.spec_bench_speedup import SPEC_BENCH_DEFINITION, spec_bench_speedup, spec_bench_speedups
from specbench.results.stats import paired_rows, paired_speedup, run_stats
from test_stats import write_fake_run


def rec(method: str, qid: str, tokens: int, secs: float, task: str = "gsm8k", turn: int = 1, repeat: int = 0) -> Record:
    return Record(method=method, task=task, subtask=task_label(task), task_version="1", question_id=qid, category="",
                  turn=turn, repeat=repeat, prompt_tokens=4, new_tokens=tokens, wall_time_s=secs,
                  forward_passes=tokens, draft_time_s=0.0, verify_time_s=0.0, output_ids=[7] * tokens)


# one short fast question (8 tokens) and one long slow one (128 tokens)
METHOD = [rec("pld", "1", 8, 0.125), rec("pld", "2", 128, 4.0)]  # 64 and 32 tokens/s
AR = [rec("ar", "1", 8, 0.25), rec("ar", "2", 128, 16.0)]  # 32 and 8 tokens/s


def test_mean_of_question_speeds_differs_from_pooled() -> None:
    assert spec_bench_speedup(METHOD, AR) == 2.4  # mean(64, 32) / mean(32, 8) = 48 / 20
    pooled, _, _ = paired_speedup([paired_rows(METHOD, AR)])
    assert pooled == pytest.approx(16.25 / 4.125, abs=1e-12)  # (136 / 4.125) / (136 / 16.25) = 3.94


def test_turns_summed_per_question_and_repeats_averaged_as_runs() -> None:
    # MT-Bench: turns 8 tokens in 0.125 s and 8 in 0.375 s -> 16 / 0.5 = 32 tokens/s (not the mean of 64 and 21.3)
    mine = [rec("pld", "81", 8, 0.125, "mt_bench", 1), rec("pld", "81", 8, 0.375, "mt_bench", 2)]
    ar = [rec("ar", "81", 8, 0.5, "mt_bench", 1), rec("ar", "81", 8, 0.5, "mt_bench", 2)]  # 16 tokens/s
    assert spec_bench_speedup(mine, ar) == 2.0
    # a second repeat with AR twice as slow: its ratio is 4.8; the runs' mean is 3.6 (pooling repeats would give 3.2)
    again = [rec(r.method, r.question_id, r.new_tokens, r.wall_time_s * (r.method == "ar" and 2 or 1), repeat=1)
             for r in METHOD + AR]
    assert spec_bench_speedup(METHOD + again[:2], AR + again[2:]) == pytest.approx(3.6, abs=1e-12)
    # unpaired units count on neither side; no paired question, no value
    assert spec_bench_speedup(METHOD + [rec("pld", "3", 1000, 1.0)], AR) == 2.4
    assert spec_bench_speedup(METHOD, []) is None


def test_overall_is_the_mean_over_all_questions_not_per_subtask() -> None:
    extra = [rec("pld", "9", 64, 1.0, "nq"), rec("ar", "9", 64, 1.0, "nq")]  # NQ: 64 and 64 tokens/s
    run = Run(Path("x"), {"config": {"methods": ["ar", "pld"]}}, METHOD + AR + extra)
    got = spec_bench_speedups(run)
    assert got["pld"]["GSM8K"] == 2.4 and got["pld"]["NQ"] == 1.0
    assert got["pld"][OVERALL] == pytest.approx((64 + 32 + 64) / (32 + 8 + 64), abs=1e-12)
    assert spec_bench_speedups(run, ["GSM8K"]) == {"pld": {"GSM8K": 2.4, OVERALL: 2.4}}


def test_beside_published_the_ratio_uses_spec_bench_definition() -> None:
    run = Run(Path("myrun"), {"config": {"methods": ["ar", "eagle"]}},
              [replace(r, method="eagle" if r.method == "pld" else "ar") for r in METHOD + AR])
    ref = load_published("spec-bench:a100-vicuna-7b")  # EAGLE2 GSM8K 2.79x, Overall 2.36x
    t = run_vs_published(run_stats(run, 0), ref, run.name, spec_bench_speedups(run, ref.subtasks()))
    assert t.headers == ["method", "published as", "subtask", "yours (pooled)", f"yours ({SPEC_BENCH_DEFINITION})",
                         "published", "yours/published (Spec-Bench's definition)"]
    rows = {r[2]: r for r in t.rows}
    assert rows["GSM8K"] == ["eagle", "EAGLE2", "GSM8K", "3.94x", "2.40x", "2.79x", "0.86"]
    assert rows[OVERALL][3:] == ["3.94x", "2.40x", "2.36x", "1.02"]
    assert rows["mean accepted tokens"][3:] == ["1.00", "", "4.34", "0.23"]  # tau: one definition


def test_compare_reference_and_preset_report_show_both(tmp_path: Path, capsys) -> None:
    plain = write_fake_run(tmp_path / "plain", tasks=("mt_bench", "gsm8k"), n_questions=3)
    assert main(["compare", str(plain), "--reference", "spec-bench:a100-vicuna-7b", "--bootstrap", "10"]) == 0
    assert f"yours ({SPEC_BENCH_DEFINITION})" in capsys.readouterr().out
    assert SPEC_BENCH_DEFINITION not in render(load_run(plain))  # a run not put beside the table: unchanged
    manifest = json.loads((plain / "manifest.json").read_text())
    manifest["config"]["preset"] = "spec-bench"
    (plain / "manifest.json").write_text(json.dumps(manifest))
    text = " ".join(render(load_run(plain)).split())
    assert f"Speedup vs AR in {SPEC_BENCH_DEFINITION}" in text
    expected = spec_bench_speedups(load_run(plain))["pld"]
    assert f"| pld | {expected['MT-Bench']:.2f}x | {expected['GSM8K']:.2f}x | {expected[OVERALL]:.2f}x |" in text
