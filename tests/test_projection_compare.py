"""``specbench compare --onto`` and ``specbench leaderboard --onto`` (issue 69): one run, N machines in one table,
the measured column first and a projected column per device profile, labelled in every output format.

The run and profiles are ``test_projection``'s constructed ones: machine A's run projected onto B's profile
gives B's measured speedup exactly, so the projected figures here are checked against closed-form values.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.reports.projection_columns import MEASURED_HEAD
from specbench.reports.projection_plot import HATCH, machine_speedup_plot
from specbench.reports.projection_table import build_projection, onto_profile
from test_projection import SHAPE, A, B, measured, profile_of, run_on, write_run

LABEL_A = "made-up CPU 0.01, fast 2 threads, float32, 2026-01-01"
LABEL_B = "made-up CPU 0.004, fast 2 threads, float32, 2026-01-01"
METHODS = ("pld", "sps", "eagle")


@pytest.fixture()
def setup(tmp_path: Path) -> Path:
    """A run timed on machine A, and A's and B's device profiles (a.json, b.json)."""
    write_run(tmp_path / "run", run_on(A))
    (tmp_path / "a.json").write_text(json.dumps(profile_of(A)), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(profile_of(B)), encoding="utf-8")
    return tmp_path


def compare(tmp: Path, *extra: str) -> int:
    return main(["compare", str(tmp / "run"), "--onto", str(tmp / "a.json"), "--onto", str(tmp / "b.json"),
                 "--bootstrap", "20", *extra])


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the markdown table whose header names the measured column."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if MEASURED_HEAD in ln)
    body = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        body.append([c.strip() for c in ln.strip("|").split(" | ")])
    return body


def test_compare_onto_one_run_gives_measured_then_a_projected_column_per_profile(setup, capsys):
    assert compare(setup) == 0
    text = capsys.readouterr().out
    header = next(ln for ln in text.splitlines() if MEASURED_HEAD in ln)
    assert header == (f"| Method | Subtask | {MEASURED_HEAD} | projected on {LABEL_A} | projected on {LABEL_B} |")
    rows = {(r[0], r[1]): r for r in table_rows(text)}
    on_a, on_b = run_on(A), run_on(B)
    for m in METHODS:
        row = rows[m, "Overall"]
        assert row[2] == f"{measured(on_a, m):.2f}x"
        assert row[3] == f"{measured(on_a, m):.2f}x projected on {LABEL_A}"  # (A onto A: its own figure)
        assert row[4] == f"{measured(on_b, m):.2f}x projected on {LABEL_B}"
    assert "Projected figures are not measurements" in text and f"profile {LABEL_B}: {setup / 'b.json'}" in text


def test_markdown_labels_every_projected_cell_with_its_profile(setup, capsys):
    assert compare(setup, "--out", str(setup / "out" / "cmp.md")) == 0
    text = (setup / "out" / "cmp.md").read_text(encoding="utf-8")
    rows = table_rows(text)
    assert len(rows) == 2 * len(METHODS)  # (Overall and GSM8K per method)
    assert all(r[3].endswith(f" projected on {LABEL_A}") and r[4].endswith(f" projected on {LABEL_B}") for r in rows)
    assert not any("projected" in r[2] for r in rows)  # (the measured column is not)


def test_json_labels_every_projected_figure_with_its_profile(setup):
    assert compare(setup, "--out", str(setup / "cmp.md")) == 0
    data = json.loads((setup / "cmp.projection.json").read_text(encoding="utf-8"))
    assert data["kind"] == "specbench projections" and [r["run"] for r in data["runs"]] == ["run"]
    proj = data["runs"][0]
    assert [p["label"] for p in proj["profiles"]] == [LABEL_A, LABEL_B]
    assert proj["profiles"][1]["dtype"] == "float32" and proj["profiles"][1]["created"].startswith("2026-01-01")
    cells = [c for r in proj["rows"] for c in r["projected"]]
    assert len(cells) == 2 * 2 * len(METHODS)
    assert all(c["kind"] == "projected" and c["profile"] in (LABEL_A, LABEL_B) for c in cells)


def test_csv_labels_every_projected_figure_with_its_profile(setup):
    assert compare(setup, "--out", str(setup / "cmp.md")) == 0
    rows = list(csv.DictReader(io.StringIO((setup / "cmp.projection.csv").read_text(encoding="utf-8"))))
    projected = [r for r in rows if r["kind"] == "projected"]
    assert len(projected) == 2 * len(rows) // 3  # (one measured and two projected lines per row)
    assert {r["profile"] for r in projected} == {LABEL_A, LABEL_B}
    assert all(r["profile"] == "" for r in rows if r["kind"] == "measured")


def test_plot_hatches_projected_bars_and_names_their_profile(setup):
    fig = machine_speedup_plot([build_projection(run_on(A), [onto_profile("b.json", profile_of(B))])])
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    assert labels == ["measured: run made-up", f"projected: {LABEL_B}"]
    assert [h.patches[0].get_hatch() for h in handles] == [None, HATCH]
    heights = sorted(round(p.get_height(), 6) for p in handles[1].patches)
    assert heights == sorted(round(measured(run_on(B), m), 6) for m in METHODS)
    assert "projected" in ax.get_title()


def test_compare_plot_writes_the_per_machine_figure_beside_the_run_figure(setup):
    assert compare(setup, "--plot", str(setup / "cmp.png")) == 0
    assert (setup / "cmp-projected.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (setup / "cmp.png").exists()


def test_compare_of_two_runs_projects_each(setup, capsys):
    write_run(setup / "run_b", run_on(B))
    assert main(["compare", str(setup / "run"), str(setup / "run_b"), "--onto", str(setup / "b.json"),
                 "--bootstrap", "20"]) == 0
    text = capsys.readouterr().out
    assert "Measured and projected speedup vs ar: run run\n" in text.replace("**", "")
    assert "Measured and projected speedup vs ar: run run_b\n" in text.replace("**", "")
    assert "pld: speedup vs ar on each run" in text  # (the comparison itself is still there)


def leaderboard(tmp: Path, *extra: str) -> int:
    return main(["leaderboard", str(tmp / "run"), "--out", str(tmp / "lb"), "--bootstrap", "20", *extra])


def test_leaderboard_onto_adds_a_labelled_section_and_changes_nothing_else(setup, capsys):
    assert leaderboard(setup, "--no-plots") == 0
    plain = (setup / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    assert not (setup / "lb" / "projection.json").exists()
    assert leaderboard(setup, "--no-plots", "--onto", str(setup / "b.json")) == 0
    text = (setup / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    assert text.startswith(plain.rstrip("\n")) and "## Projected onto other machines' device profiles" in text
    rows = table_rows(text)
    assert len(rows) == 2 * len(METHODS) and all(r[3].endswith(f" projected on {LABEL_B}") for r in rows)
    data = json.loads((setup / "lb" / "projection.json").read_text(encoding="utf-8"))
    assert {c["profile"] for r in data["runs"][0]["rows"] for c in r["projected"]} == {LABEL_B}
    assert f",projected,\"{LABEL_B}\"," in (setup / "lb" / "projection.csv").read_text(encoding="utf-8")


def test_leaderboard_html_labels_every_projected_cell_and_embeds_the_figure(setup):
    assert leaderboard(setup, "--onto", str(setup / "b.json")) == 0
    page = (setup / "lb" / "leaderboard.html").read_text(encoding="utf-8")
    table = page[page.index('id="proj0"'):]
    table = table[:table.index("</table>")]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table)
    projected = cells[3::4]  # (method, subtask, measured, projected on B)
    assert len(projected) == 2 * len(METHODS) and all(c.endswith(f"projected on {LABEL_B}") for c in projected)
    assert f"<th>projected on {LABEL_B}</th>" in table
    assert 'alt="speedup per method per machine (hatched bars: projected)" src="data:image/png;base64,' in page


def one_line_error(capsys, code: int) -> str:
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    return err


@pytest.mark.parametrize("command", ["compare", "leaderboard"])
def test_each_refusal_is_one_line_exit_2_in_both_commands(setup, capsys, command):
    def run(profile: dict, run_dir: str = "run") -> str:
        (setup / "p.json").write_text(json.dumps(profile), encoding="utf-8")
        args = [command, str(setup / run_dir), "--onto", str(setup / "p.json"), "--bootstrap", "20"]
        code = main(args + (["--out", str(setup / "lb")] if command == "leaderboard" else []))
        err = one_line_error(capsys, code)
        assert err.startswith(f"specbench {command}: error:")
        return err

    assert "layers 2 != 30" in run(profile_of(B, shape={**SHAPE, "layers": 30}))
    assert "tokenizer" in run(profile_of(B, shape={**SHAPE, "tokenizer": "ffff"}))
    assert "in bfloat16, run run in float32" in run(profile_of(B, dtype="bfloat16"))
    missing = run(profile_of(B, drafters=False))
    assert "lacks the drafter sps" in missing and "--drafters sps" in missing
    cut = run_on(A)
    cut.records[1] = dataclasses.replace(cut.records[1], draft_times_s=[])
    write_run(setup / "cut", cut)
    assert "no per-step records" in run(profile_of(B), "cut")


def test_compare_onto_needs_a_run(setup, capsys):
    code = main(["compare", "--onto", str(setup / "b.json")])
    assert "compare needs two runs" in one_line_error(capsys, code)


@pytest.mark.parametrize("command", ["compare", "leaderboard"])
def test_here_without_onto_is_refused(setup, capsys, command):
    code = main([command, str(setup / "run"), str(setup / "run"), "--here", str(setup / "a.json"), "--out",
                 str(setup / "lb")])
    assert "give --onto PROFILE too" in one_line_error(capsys, code)


def test_budget_auto_cells_are_marked_and_explained_under_the_table():
    from specbench.reports.projection_columns import projection_notes, projection_table
    from test_projection import eagle_config, sps_config

    configs = {"sps": sps_config(), "pld": {"budget": "auto"}, "eagle": eagle_config()}
    proj = build_projection(run_on(A, configs=configs), [onto_profile("b.json", profile_of(B))])
    table = projection_table(proj)
    cells = {r[0]: r[3] for r in table.rows}
    assert cells["pld"].endswith(f"x projected* on {LABEL_B}") and cells["sps"].endswith(f"x projected on {LABEL_B}")
    notes = projection_notes(proj)
    assert any(n.startswith("projected*: the best fixed budget in hindsight") for n in notes)
    assert any("pld ran with budget=auto" in n for n in notes)
