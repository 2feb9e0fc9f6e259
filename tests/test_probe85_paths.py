"""Findings of issue 85's hostile probe on output paths, unwritten files and live runs (items 10, 11, 13).

- 10: ``project --out`` onto an existing file, or into a folder where ``projection.md`` is a folder, and
  ``compare --out`` onto a folder or under a file, ended in ``FileExistsError`` / ``IsADirectoryError``
  tracebacks with exit 1; ``leaderboard``, ``merge`` and ``profile`` refuse the same in one line.
- 11: a run that could not write ``summary.json`` (disk full) exited 0, its last line listing ``summary.json``
  among the files written.
- 13: ``check`` on a run still running (its lock held by a live process) said "an interrupted run? re-run its
  command to resume it".
"""
from __future__ import annotations

import os

from fault_helpers import cli, fake_run, record
from specbench.run.lock import RunLock


# -- 13: check on a live run says it is running -------------------------------------------------------------
def test_check_on_a_live_run_says_it_is_still_running(tmp_path):
    from specbench.results.check import check_run

    run = fake_run(tmp_path / "run", [record("ar", [5, 6])])  # (pld's record not written yet)
    with RunLock(run):  # (an flock of this process: the probe's own descriptor sees it held)
        code, lines = check_run(run, decode=False)
    text = "\n".join(lines)
    assert code == 1 and "still running" in text and f"pid {os.getpid()}" in text, text
    assert "interrupted" not in text and "re-run its command" not in text, text
    code, lines = check_run(run, decode=False)  # (once it has stopped: the interrupted run's hint)
    assert code == 1 and "interrupted run" in "\n".join(lines)


def test_check_on_a_live_run_without_records_yet_says_it_is_running(tmp_path, capsys):
    run = fake_run(tmp_path / "run", [])
    with RunLock(run):
        code, err = cli(["check", str(run), "--ids"], capsys)
    assert code == 2 and "still running" in err and f"pid {os.getpid()}" in err, err


# -- 10: colliding output paths refused in one line, exit 2 -------------------------------------------------
def _projectable(tmp_path):
    import json

    from test_projection import A, B, profile_of, run_on, write_run

    write_run(tmp_path / "run", run_on(A))
    (tmp_path / "b.json").write_text(json.dumps(profile_of(B)), encoding="utf-8")
    (tmp_path / "a-file").write_text("not a folder\n")
    return ["--onto", str(tmp_path / "b.json")]


def _refused(argv, capsys, *words) -> None:
    code, err = cli(argv, capsys)
    assert code == 2 and all(w in err for w in words), (code, err)


def test_project_out_onto_a_file_or_a_folder_in_the_way_is_refused(tmp_path, capsys):
    onto = _projectable(tmp_path)
    run = str(tmp_path / "run")
    _refused(["project", run, *onto, "--out", str(tmp_path / "a-file")], capsys, "a-file", "not a folder")
    _refused(["project", run, *onto, "--out", str(tmp_path / "a-file" / "sub")], capsys, "a-file", "not a folder")
    (tmp_path / "out" / "projection.md").mkdir(parents=True)
    _refused(["project", run, *onto, "--out", str(tmp_path / "out")], capsys, "projection.md", "folder")
    assert not (tmp_path / "out" / "projection.json").exists()  # (refused before anything is written)


def test_compare_out_onto_a_folder_or_under_a_file_is_refused(tmp_path, capsys):
    onto = _projectable(tmp_path)
    run = str(tmp_path / "run")
    (tmp_path / "folder").mkdir()
    _refused(["compare", run, *onto, "--out", str(tmp_path / "folder")], capsys, "folder", "is a folder")
    _refused(["compare", run, *onto, "--out", str(tmp_path / "a-file" / "c.md")], capsys, "a-file", "not a folder")
    (tmp_path / "c.projection.json").mkdir()
    _refused(["compare", run, *onto, "--out", str(tmp_path / "c.md")], capsys, "c.projection.json", "folder")


def test_leaderboard_with_a_folder_where_its_markdown_goes_says_so(tmp_path, capsys):
    _projectable(tmp_path)
    (tmp_path / "lb" / "leaderboard.md").mkdir(parents=True)
    code, err = cli(["leaderboard", str(tmp_path / "run"), "--out", str(tmp_path / "lb"), "--no-plots"], capsys)
    assert code in (0, 2) and "leaderboard.md" in err and "folder" in err and "Traceback" not in err, err


# -- 11: a run that could not write its summary says so and fails ------------------------------------------
def test_a_run_that_could_not_write_its_summary_says_which_and_fails(tmp_path, capsys, monkeypatch):
    import errno

    from fault_helpers import run_args
    from fs_faults import inject
    from tiny_model_dir import save_tiny_model

    model = save_tiny_model(tmp_path / "model")
    out = tmp_path / "out"
    full = inject(monkeypatch, out, errno.ENOSPC, match="summary.json")  # (the disk fills up at the summary)
    code, err = cli(run_args(model, out, "r"), capsys)
    assert code == 2, err
    results = next(line for line in err.splitlines() if "results:" in line)
    assert "report.md" in results and "summary.json" not in results, results
    assert "summary.json" in err.splitlines()[-1] and "could not write" in err.splitlines()[-1], err
    full.off()
    assert cli(["report", str(out / "r")], capsys)[0] == 0 and (out / "r" / "summary.json").is_file()
