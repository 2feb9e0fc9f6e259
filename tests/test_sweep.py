"""``specbench sweep`` (issue 14): grid parsing, points and folders, the best point, the writers on
constructed statistics, one-line errors before the model loads, and one end-to-end sweep on a tiny model."""
from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

import specbench.results.sweep
import specbench.reports.sweep_report
from specbench.catalog import OVERALL
from specbench.cli import main
from specbench.errors import ConfigError
from specbench.results.run_folder import read_manifest, read_records
from specbench.results.stats import Cell
from specbench.results.sweep import (PointResult, SweepPoint, best_line, best_point, grid_points, parse_grid,
                             sweep_summary)
from specbench.reports.sweep_report import series_of, sweep_markdown, write_sweep_plot
from json_schema_subset import validate
from tiny_model_dir import save_tiny_model

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SUMMARY_SCHEMA = json.loads((Path(specbench.reports.summary.__file__).parent / "summary.schema.json").read_text())


def cell(speedup: float | None, lo: float | None = None, hi: float | None = None, tau: float = 1.5,
         subtask: str = OVERALL) -> Cell:
    return Cell("dresd", subtask, 3, speedup, lo, hi, tau, 0.25, 4.0, 0.01, 0.9, 10.0, 30, 3.0, 0.03)


def result(label_pairs: tuple[tuple[str, str], ...], speedup: float | None, lo=None, hi=None, tau=1.5) -> PointResult:
    return PointResult(SweepPoint(label_pairs), cell(speedup, lo, hi, tau),
                       {"HumanEval": cell(speedup, lo, hi, tau, "HumanEval")})


def test_grid_parsing_and_cartesian_product():
    grid = parse_grid(["dresd.num_drafts=5, 10", "dresd.draft_len=4,8,16"], "dresd")
    assert grid == {"num_drafts": ["5", "10"], "draft_len": ["4", "8", "16"]}
    points = grid_points(grid)
    assert [p.as_dict() for p in points[:4]] == [{"num_drafts": "5", "draft_len": "4"},
                                                 {"num_drafts": "5", "draft_len": "8"},
                                                 {"num_drafts": "5", "draft_len": "16"},
                                                 {"num_drafts": "10", "draft_len": "4"}]
    assert len(points) == 6 and len({p.folder for p in points}) == 6
    for bad, message in [
        (["rest.c"], "--grid expects METHOD.KEY=V1,V2,..., got 'rest.c'"),
        (["c=8,16"], "--grid expects METHOD.KEY=V1,V2,..., got 'c=8,16'"),
        (["rest.c=8,,16"], "--grid expects METHOD.KEY=V1,V2,..., got 'rest.c=8,,16'"),
        (["rest.c="], "--grid expects"),
        ([], "at least one --grid"),
        (["pld.num_draft=2"], "--grid pld.num_draft: the option belongs to method 'pld', but --method is 'rest'"),
        (["rest.c=8", "rest.c=16"], "--grid rest.c given twice"),
        (["rest.c=8,8"], "a value is listed twice"),
    ]:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            parse_grid(bad, "rest")


def test_point_labels_and_folders():
    one = SweepPoint((("c", "16"),))
    assert (one.label, one.folder, one.method_opt_line("rest")) == ("c=16", "c=16", "--method-opt rest.c=16")
    two = SweepPoint((("num_drafts", "5"), ("draft_len", "5")))
    assert (two.label, two.folder) == ("num_drafts=5,draft_len=5", "num_drafts=5+draft_len=5")
    assert SweepPoint((("datastore", "/tmp/a b"),)).folder == "datastore=_tmp_a_b"
    with pytest.raises(ConfigError, match="map to the same folder 'datastore=a_b'"):
        grid_points({"datastore": ["a/b", "a_b"]})
    assert doctest.testmod(specbench.results.sweep).failed == 0 and doctest.testmod(specbench.reports.sweep_report).failed == 0


def test_best_point_selection():
    c = lambda v: (("c", v),)  # noqa: E731
    best = best_point([result(c("8"), 0.9, 0.85, 0.95), result(c("16"), 1.2, 1.1, 1.3),
                       result(c("32"), 1.0, 0.9, 1.04)])
    assert (best.best.point.label, best.runner_up.point.label, best.overlaps) == ("c=16", "c=32", False)
    assert best_line("rest", best) == ("best point: c=16 (Overall 1.20x ±0.10; its 95% CI does not overlap the "
                                       "runner-up c=32 at 1.00x ±0.07)\n--method-opt rest.c=16")
    tie = best_point([result(c("8"), 1.0, 0.8, 1.2), result(c("16"), 1.0, 0.9, 1.1)])
    assert tie.best.point.label == "c=8" and tie.overlaps is True  # ties: the first in grid order
    no_ci = best_point([result(c("8"), 1.1), result(c("16"), None), result(c("32"), 0.7, 0.6, 0.8)])
    assert no_ci.best.point.label == "c=8" and no_ci.runner_up.point.label == "c=32" and no_ci.overlaps is None
    assert "no CI to compare with" in best_line("rest", no_ci)
    single = best_point([result(c("8"), 0.9, 0.8, 1.0)])
    assert single.runner_up is None and best_line("rest", single).endswith("±0.10)\n--method-opt rest.c=8")
    assert best_point([result(c("8"), None)]) is None
    assert "nothing to recommend" in best_line("rest", None)


def test_writers_on_constructed_stats(tmp_path):
    grid = {"num_drafts": ["5", "10"], "draft_len": ["4", "8"]}
    results = [result(p.options, 0.8 + 0.1 * i, 0.7 + 0.1 * i, 0.9 + 0.1 * i, tau=1.2 + 0.1 * i)
               for i, p in enumerate(grid_points(grid))]
    best = best_point(results)
    cmd = "specbench sweep --method dresd --grid dresd.num_drafts=5,10 --grid dresd.draft_len=4,8 --tasks humaneval"
    md = sweep_markdown("dresd", results, best, cmd, "dev")
    assert md.startswith("# Sweep of dresd over num_drafts, draft_len (dev split)")
    assert "| `num_drafts=10,draft_len=8` | 1.10x ±0.10 | 1.50 | 4.00 | 25.0% | 1.10x ±0.10 |" in md
    assert "`--method-opt dresd.num_drafts=10 --method-opt dresd.draft_len=8`" in md and cmd in md
    assert series_of([r.point for r in results]) == {"draft_len=4": [("5", 0), ("10", 2)],
                                                     "draft_len=8": [("5", 1), ("10", 3)]}
    summary = json.loads(json.dumps(sweep_summary("dresd", grid, {"k": "3"}, results, cmd, {"split": "dev"})))
    assert [p["folder"] for p in summary["points"]] == [r.point.folder for r in results]
    assert summary["points"][3]["overall"]["ci_high"] == pytest.approx(1.2)
    assert summary["points"][0]["subtasks"]["HumanEval"]["tau"] == pytest.approx(1.2)
    assert summary["best"] == {"label": "num_drafts=10,draft_len=8", "ci_overlaps_runner_up": True,
                               "method_opt": "--method-opt dresd.num_drafts=10 --method-opt dresd.draft_len=8",
                               "runner_up": "num_drafts=10,draft_len=4"}
    for name, rs in (("two.png", results), ("one.png", [result((("c", v),), 1.0, 0.9, 1.1) for v in "123"]),
                     ("missing.png", [result((("c", "1"),), None), result((("c", "2"),), 1.0)])):
        write_sweep_plot("dresd", rs, tmp_path / name)
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("argv, needle", [
    (["--grid", "pld.num_draft"], "--grid expects METHOD.KEY=V1,V2,..."),
    (["--grid", "rest.c=8"], "the option belongs to method 'rest', but --method is 'pld'"),
    (["--grid", "pld.bogus=1,2"], "pld: unknown key(s) bogus"),
    (["--grid", "pld.num_draft=2,0"], "pld: num_draft must be >= 1"),
    (["--grid", "pld.num_draft=2", "--split", "eval"], "runs on the dev split only"),
    (["--grid", "pld.num_draft=2", "--method-opt", "rest.c=4"], "other than --method pld: rest"),
    (["--grid", "pld.num_draft=2", "--method-opt", "pld.num_draft=3"], "both swept (--grid) and fixed"),
    (["--grid", "pld.num_draft=2", "--sweep-name", "../x"], "--sweep-name must be a single folder name"),
])
def test_bad_sweeps_fail_before_the_model_loads(argv, needle, tmp_path, capsys):
    missing_model = str(tmp_path / "no_model")  # loading it would fail with another message
    assert main(["sweep", "--method", "pld", "--tasks", "gsm8k", "--model", missing_model, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def tiny_sweep_argv(tmp_path: Path, monkeypatch, grid: str, name: str, max_new_tokens: int = 8) -> list[str]:
    """``specbench sweep`` of pld over ``grid`` on one GSM8K dev question of a tiny model saved in ``tmp_path``,
    into ``<tmp_path>/sw/<name>`` (the cache in ``tmp_path`` too)."""
    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    model = save_tiny_model(tmp_path / "model")
    return ["sweep", "--method", "pld", "--grid", grid, "--tasks", "gsm8k", "--limit", "1", "--max-new-tokens",
            str(max_new_tokens), "--model", str(model), "--device", "cpu", "--out-dir", str(tmp_path / "sw"),
            "--sweep-name", name, "--warmup", "0", "--no-progress"]


def test_end_to_end_sweep_resumes(tmp_path, monkeypatch, capsys):
    argv = tiny_sweep_argv(tmp_path, monkeypatch, "pld.num_draft=2,4", "pld_nd")
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "point 1/2 num_draft=2" in err and "point 2/2 num_draft=4" in err
    best_flags = out.strip().splitlines()[-1]
    assert best_flags in ("--method-opt pld.num_draft=2", "--method-opt pld.num_draft=4")
    folder = tmp_path / "sw" / "pld_nd"
    assert {p.name for p in folder.iterdir()} == {"num_draft=2", "num_draft=4", "sweep.json", "sweep.md", "sweep.png"}
    assert (folder / "sweep.png").read_bytes()[:8] == PNG_MAGIC
    summary = json.loads((folder / "sweep.json").read_text())
    assert summary["best"]["method_opt"] == best_flags and summary["settings"]["split"] == "dev"
    assert "specbench sweep --method pld --grid pld.num_draft=2,4 --sweep-name pld_nd --tasks gsm8k --limit 1" in \
        summary["command"]
    manifest = read_manifest(folder / "num_draft=4")
    assert manifest["config"]["split"] == "dev" and manifest["questions"] == {"gsm8k": ["473"]}  # the dev split
    assert manifest["config"]["method_options"] == {"pld": {"num_draft": "4"}}
    point_summary = json.loads((folder / "num_draft=4" / "summary.json").read_text())
    assert point_summary["run"]["split"] == "dev" and validate(SUMMARY_SCHEMA, point_summary) == []
    assert "limit 1 of the dev split" in (folder / "num_draft=4" / "report.md").read_text()
    n_records = len(read_records(folder / "num_draft=2"))
    assert n_records == 2  # ar + pld, one question
    assert main(argv) == 0  # the same command resumes: nothing re-run, same files
    assert len(read_records(folder / "num_draft=2")) == n_records
    assert capsys.readouterr().out.strip().splitlines()[-1] == best_flags
