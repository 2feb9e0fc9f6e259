"""Projected cells get the measured cells' plausibility rule, priced on the profile (issue 85, defect 2).

The run and profiles are ``test_projection``'s constructed ones: a run timed on machine A projected onto B's
profile (a plain one, then one edited so that its prices break what the run's passes allow).
"""
from __future__ import annotations

import json

from specbench.cli import main
from specbench.reports.projection_output import projection_text
from specbench.reports.projection_table import build_projection, onto_profile
from test_projection import A, B, profile_of, run_on, write_run


def _scaled(factor) -> dict:
    """B's profile with each T(n > 1) multiplied by ``factor(n)`` (T(1) kept)."""
    prof = profile_of(B)
    for curve in prof["target"]["latency_by_context_s"].values():
        t1 = curve["1"]
        curve.update({n: t1 * factor(int(n)) for n in curve if n != "1"})
    return prof


def _cells(prof: dict) -> dict:
    proj = build_projection(run_on(A), [onto_profile("b.json", prof)])
    return {(r.method, r.subtask): r.projected[0] for r in proj.rows}, proj


def test_a_projected_cell_above_what_its_passes_allow_is_marked_implausible():
    cells, proj = _cells(_scaled(lambda n: 0.4))  # (T(n) 60% below T(1): a step of more rows priced below one)
    assert all("implausible" in c.flags for c in cells.values()), cells
    assert "(implausible" in projection_text(proj)  # (its falling T(n) adds "; profile noisier than ...")
    assert any(n.startswith("implausible: pld on Overall projected on") and "T(n) falling with n" in n
               for n in proj.notes), proj.notes


def test_a_projected_cell_far_below_what_its_work_allows_is_marked_implausible():
    cells, proj = _cells(_scaled(lambda n: 10.0 * n))  # (n rows priced at 10 forwards of one row each)
    assert all("implausible" in c.flags for c in cells.values()), cells
    assert any("is below what its work allows" in n for n in proj.notes), proj.notes


def test_a_plain_projection_is_not_marked():
    cells, proj = _cells(profile_of(B))
    assert cells and all(c.flags == () for c in cells.values())
    assert not any(n.startswith("implausible") for n in proj.notes)


def test_the_mark_reaches_project_and_compare_onto(tmp_path, capsys):
    write_run(tmp_path / "run", run_on(A))  # (3.9 x n x T(1): within the read check's 4x, outside the cells' floor)
    (tmp_path / "bad.json").write_text(json.dumps(_scaled(lambda n: 3.9 * n)), encoding="utf-8")
    assert main(["project", str(tmp_path / "run"), "--onto", str(tmp_path / "bad.json"), "--out",
                 str(tmp_path / "out")]) == 0
    data = json.loads((tmp_path / "out" / "projection.json").read_text(encoding="utf-8"))
    assert all("implausible" in c["flags"] for r in data["rows"] for c in r["projected"])
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "run"), "--onto", str(tmp_path / "bad.json"), "--bootstrap", "10"]) == 0
    assert "projected on" in (out := capsys.readouterr().out) and "(implausible)" in out
