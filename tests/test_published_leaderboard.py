"""Spec-Bench's published leaderboard shipped as data: cells exactly as published (checked against the
source text), ``compare --reference`` with and without a run, and published rows kept apart in ``leaderboard``."""
from __future__ import annotations

import json

import pytest

from specbench.catalog import OVERALL
from specbench.cli import main
from specbench.errors import ConfigError
from specbench.interop.published import DATA, load_published, published_names, run_vs_published
from specbench.results.stats import Cell

# cells copied by hand from Spec-Bench's Leaderboard.md at fd2c1cd (hemingkx/Spec-Bench)
SOURCE_CELLS = {
    ("spec-bench:rtx3090-vicuna-7b", "EAGLE2"): ("MT-Bench", "2.56x", "4.35", "2.19x"),
    ("spec-bench:rtx3090-vicuna-7b", "Lookahead"): ("WMT", "1.00x", "1.64", "1.13x"),
    ("spec-bench:a100-vicuna-7b", "PLD"): ("CNN/DM", "2.66x", "1.75", "1.66x"),
    ("spec-bench:a100-vicuna-13b", "EAGLE3"): ("GSM8K", "3.42x", "5.71", "3.02x"),
    ("spec-bench:a100-vicuna-33b", "SAMD[EAGLE2]"): ("NQ-RAG", "2.33x", "4.07", "2.59x"),
}


def test_names_source_and_cells_as_published() -> None:
    assert published_names() == ["spec-bench:a100-vicuna-13b", "spec-bench:a100-vicuna-33b",
                                 "spec-bench:a100-vicuna-7b", "spec-bench:rtx3090-vicuna-7b"]
    assert json.loads(DATA.read_text())["source"]["commit"].startswith("fd2c1cd")
    for (table, name), (sub, speedup, tau, overall) in SOURCE_CELLS.items():
        row = next(r for r in load_published(table).rows if r["published_name"] == name)
        assert (row["speedup"][sub], row["mean_accepted_tokens"], row["overall"]) == (speedup, tau, overall)
    assert [len(load_published(n).rows) for n in published_names()] == [11, 10, 10, 10]
    with pytest.raises(ConfigError, match="unknown reference"):
        load_published("spec-bench:h100-vicuna-7b")


def _cell(method: str, sub: str, speedup: float | None, tau: float) -> Cell:
    return Cell(method, sub, 3, speedup, None, None, tau, None, 0.0, 0.0, 0.0, 10.0, 30, 3.0, 0.0)


def test_run_beside_published_gives_yours_published_and_ratio() -> None:
    stats = {"ar": {OVERALL: _cell("ar", OVERALL, None, 1.0)},
             "eagle": {"GSM8K": _cell("eagle", "GSM8K", 1.33, 2.0), OVERALL: _cell("eagle", OVERALL, 1.1, 2.17)},
             "mine": {OVERALL: _cell("mine", OVERALL, 3.0, 3.0)}}  # no published row: left out
    spec_bench = {"eagle": {"GSM8K": 1.4, OVERALL: 1.2}, "mine": {OVERALL: 3.0}}  # Spec-Bench's definition
    t = run_vs_published(stats, load_published("spec-bench:a100-vicuna-7b"), "myrun", spec_bench)
    rows = {(r[0], r[2]): r for r in t.rows}
    assert rows[("eagle", "GSM8K")] == ["eagle", "EAGLE2", "GSM8K", "1.33x", "1.40x", "2.79x", "0.50"]
    assert rows[("eagle", OVERALL)][3:] == ["1.10x", "1.20x", "2.36x", "0.51"]
    assert rows[("eagle", "mean accepted tokens")][3:] == ["2.17", "", "4.34", "0.50"]
    assert {r[0] for r in t.rows} == {"eagle"}


def test_compare_two_published_tables_without_a_run(capsys) -> None:
    assert main(["compare", "--reference", "spec-bench:rtx3090-vicuna-7b", "--reference", "spec-bench:a100-vicuna-7b"]) == 0
    out = capsys.readouterr().out
    # EAGLE2 on MT-Bench: 2.56x on the 3090, 2.84x on the A100, as published
    assert "| EAGLE2 | MT-Bench | 2.56x | 2.84x | 1.11 |" in out
    assert main(["compare", "--reference", "spec-bench:a100-vicuna-33b"]) == 0
    assert "EAGLE2 (published)" in capsys.readouterr().out
    assert main(["compare", "--reference", "spec-bench:nope"]) == 2


def test_leaderboard_adds_published_rows_apart(tmp_path, capsys) -> None:
    from specbench.interop.published import published_table
    from specbench.reports.leaderboard.markdown import leaderboard_md

    text = leaderboard_md([], [], None, [published_table(load_published("spec-bench:a100-vicuna-13b"))])
    assert "## Published reference tables (not measured here)" in text
    assert "| EAGLE3 (published) | 3.48x | 2.36x | 3.14x | 2.94x | 3.42x | 2.78x | 5.71 | 3.02x |" in text
