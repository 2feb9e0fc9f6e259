"""The report's pairs of our drafters and the engine's same setting (``reports/engine_pairs.py``), on constructed
cells: which rows pair, the loop ratio at equal tau computed by hand, and the section in the engine's report."""
from __future__ import annotations

from pathlib import Path

import pytest

from specbench.reports.engine_pairs import loop_ratio, pair_rows, pairs, pairs_section
from specbench.reports.serving_report import serving_section
from specbench.results.loaded_run import Run
from specbench.results.stats import Cell


def cell(method: str, tau: float, tokens_per_s: float, speedup: float | None = None) -> Cell:
    return Cell(method, "Overall", 5, speedup, None, None, tau, None, 0.0, 0.0, 0.0, tokens_per_s, 100, 1.0, 0.0)


OWN = {"ar": {"Overall": cell("ar", 1.0, 20.0)},
       "ngram-simple": {"Overall": cell("ngram-simple", 1.25, 24.0, 1.20)},
       "ngram-simple@pld": {"Overall": cell("ngram-simple@pld", 1.6, 28.8, 1.44)},
       "pld": {"Overall": cell("pld", 1.5, 26.0, 1.3)}}
# the engine's view: engine:off is its "ar"
ENGINE = {"ar": {"Overall": cell("ar", 1.0, 25.0)},
          "engine:ngram-simple": {"Overall": cell("engine:ngram-simple", 1.25, 31.25, 1.25)},
          "engine:ngram-simple@pld": {"Overall": cell("engine:ngram-simple@pld", 1.5, 33.0, 1.32)},
          "engine:ngram": {"Overall": cell("engine:ngram", 1.25, 30.0, 1.2)}}


def test_methods_pair_with_the_engine_row_of_the_same_name_baselines_first() -> None:
    assert pairs(OWN, ENGINE) == [("ar", "engine:off"), ("ngram-simple", "engine:ngram-simple"),
                                  ("ngram-simple@pld", "engine:ngram-simple@pld")]  # pld and engine:ngram: no pair
    assert pairs({"ar": {}, "pld": {}}, ENGINE) == []  # baselines alone are no comparison


def test_loop_ratio_at_equal_tau_by_hand() -> None:
    rows = {r[0]: r for r in pair_rows(OWN, ENGINE)}
    # ar: 20 / 25 = 0.80; ngram-simple at the same tau: 24 / 31.25 = 0.768; @pld: (28.8 / 1.6) / (33 / 1.5) = 18 / 22
    assert [rows[m][-1] for m in ("ar", "ngram-simple", "ngram-simple@pld")] == ["0.80", "0.77", "0.82"]
    assert rows["ngram-simple@pld"][2:8] == ["1.60", "1.50", "1.44x", "1.32x", "28.8", "33.0"]
    assert rows["ar"][4:6] == ["1.00x (baseline)", "1.00x (baseline)"]
    assert loop_ratio(cell("x", 1.5, 0.0), cell("y", 1.5, 3.0)) is None  # nothing timed: no ratio
    assert loop_ratio(cell("x", 2.0, 40.0), cell("y", 1.0, 10.0)) == pytest.approx(2.0)


def test_a_pair_without_an_overall_cell_is_left_out_and_no_pair_no_section() -> None:
    own = {**OWN, "ngram-simple": {"GSM8K": cell("ngram-simple", 1.2, 20.0, 1.1)}}
    assert [r[0] for r in pair_rows(own, ENGINE)] == ["ar", "ngram-simple@pld"]
    assert pairs_section({"ar": OWN["ar"], "pld": OWN["pld"]}, ENGINE) is None


def test_the_engine_section_shows_the_pairs() -> None:
    own = Run(Path("r"), {"config": {"methods": ["ar", "ngram-simple"]}}, [])
    engine = Run(Path("r"), {"config": {"methods": ["ar", "engine:ngram-simple"]}}, [])
    text = serving_section(own, engine, ENGINE, OWN, "### rendered")
    assert "### Our drafters beside the engine's same setting (Overall)" in text
    section = text.split("### Our drafters beside")[1].splitlines()
    line = next(row for row in section if row.split("|")[1:2] == [" ngram-simple     "])
    assert "engine:ngram-simple " in line and line.rstrip(" |").endswith("0.77")
    assert next(row for row in section if row.startswith("| ar ")).rstrip(" |").endswith("0.80")
