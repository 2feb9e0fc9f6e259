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
