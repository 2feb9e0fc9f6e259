"""A forced merge of different models or backends is said everywhere (issue 85, defect 4).

The defect: ``merge --force`` of two models, or of two backends, was then reported, checked (exit 0), put on the
leaderboard and projected as one model on one backend; the differences survived only in the manifest's
``merge_forced_differences``. Now the merged manifest names what differed (``merge_forced_keys``), every figure is
marked ``(forced merge: model)`` by the shared rule (``results.cell_flags``), and ``check`` fails such a merge unless
``--allow-forced-merge``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fault_helpers import cli_out
from specbench.reports.leaderboard.build import build_leaderboard
from test_compare_merge import _split_into_shards
from test_stats import write_fake_run


def forced(tmp_path: Path, capsys, **changes) -> Path:
    """Two shards of one fake run, the second's manifest changed by ``changes``, merged with ``--force``."""
    full = write_fake_run(tmp_path / "full", {"pld": 1.5}, tasks=("gsm8k", "humaneval"), n_questions=4)
    s1, s2 = _split_into_shards(full, tmp_path / "shards", 2)
    manifest = json.loads((s2 / "manifest.json").read_text())
    (s2 / "manifest.json").write_text(json.dumps(manifest | changes))
    out = tmp_path / "merged"
    code, stdout, _ = cli_out(["merge", str(s1), str(s2), "--out", str(out), "--force"], capsys)
    assert code == 0 and "warning (forced)" in stdout, stdout
    return out


@pytest.fixture
def two_models(tmp_path, capsys) -> Path:
    return forced(tmp_path, capsys, model={"id": "other-model", "hash": "def456", "dtype": "float32", "tf32": False})


def test_the_merged_manifest_names_what_differed(two_models):
    assert json.loads((two_models / "manifest.json").read_text())["merge_forced_keys"] == ["model"]


def test_check_fails_it_unless_allowed(two_models, capsys):
    code, out, _ = cli_out(["check", str(two_models), "--ids"], capsys)
    assert code == 1, out
    assert "FAIL: a forced merge of shards that differ in model" in out and "--allow-forced-merge" in out
    code, out, _ = cli_out(["check", str(two_models), "--ids", "--allow-forced-merge"], capsys)
    assert code == 0 and "FORCED MERGE (allowed)" in out, out


def test_two_backends_fail_too(tmp_path, capsys):
    merged = forced(tmp_path, capsys, backend={"name": "llamacpp", "key": "llamacpp", "threads": 2})
    code, out, _ = cli_out(["check", str(merged), "--ids"], capsys)
    assert code == 1 and "differ in backend" in out, out


def test_report_summary_leaderboard_and_compare_mark_it(two_models, tmp_path, capsys):
    assert cli_out(["report", str(two_models)], capsys)[0] == 0
    report = (two_models / "report.md").read_text()
    assert "**Forced merge:**" in report and "(forced merge: model)" in report
    summary = json.loads((two_models / "summary.json").read_text())
    pld = next(m for m in summary["methods"] if m["method"] == "pld")
    assert "forced merge: model" in pld["subtasks"]["Overall"]["flags"]
    text = build_leaderboard([two_models], tmp_path / "lb", n_boot=20, plots=False)["markdown"].read_text()
    assert "(forced merge: model)" in text and "merges shards that differ" in text
    code, out, _ = cli_out(["compare", str(two_models), str(tmp_path / "full"), "--bootstrap", "20"], capsys)
    assert code == 0 and "(forced merge: model)" in out, out


def test_a_forced_merge_of_the_same_model_and_backend_passes_check(tmp_path, capsys):
    merged = forced(tmp_path, capsys, git_commit="cafe")  # (another commit: forced, yet one model on one backend)
    code, out, _ = cli_out(["check", str(merged), "--ids"], capsys)
    assert code == 0 and "FORCED MERGE" in out and "git_commit" in out, out
