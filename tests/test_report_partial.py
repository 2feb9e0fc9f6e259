"""``report`` on an interrupted or still running run says so (issue 44, item 5.5): the header and the summary
give the records present of those planned, and "running" while a process holds the run's lock; a complete run
reports exactly as before."""
from __future__ import annotations

import json
from pathlib import Path

from fault_helpers import cli_out
from json_schema_subset import validate
from specbench.reports.summary import SCHEMA_PATH
from specbench.reports.report import write_report
from specbench.run.lock import RunLock
from test_merge_partial import TASKS, _kill_part_way
from test_stats import write_fake_run

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def _run(tmp_path: Path) -> Path:
    return write_fake_run(tmp_path / "r", {"pld": 1.5}, tasks=TASKS, n_questions=4)  # 16 records planned


def test_an_interrupted_run_is_reported_as_partial(tmp_path, capsys):
    run = _run(tmp_path)
    _kill_part_way(run, 11)
    code, out, _ = cli_out(["report", str(run)], capsys)
    assert code == 0
    head = out.split("###")[0]
    assert "Partial run: 11 of 16 planned records" in head and "running" not in head, head
    summary = json.loads((run / "summary.json").read_text())
    assert validate(SCHEMA, summary) == []  # (the fields are optional in the schema: additive)
    assert summary["run"]["partial"] is True and summary["run"]["running"] is False
    assert (summary["run"]["records_present"], summary["run"]["records_planned"]) == (11, 16)


def test_a_running_run_is_reported_as_running(tmp_path):
    run = _run(tmp_path)
    with RunLock(run):
        text = write_report(run)
    assert "Partial run: 16 of 16 planned records; still running" in text.split("###")[0]
    assert json.loads((run / "summary.json").read_text())["run"]["running"] is True


def test_a_complete_run_has_no_partial_line_or_fields(tmp_path):
    run = _run(tmp_path)
    text = write_report(run)
    assert "Partial" not in text and "running" not in text
    summary = json.loads((run / "summary.json").read_text())["run"]
    assert not {"partial", "records_planned", "running"} & set(summary)


def test_docstring_examples():
    import doctest

    import specbench.results.progress

    assert doctest.testmod(specbench.results.progress).failed == 0
