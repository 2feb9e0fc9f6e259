"""Every timing field of a record is checked when it is read (issue 44, item 5.3): a negative or impossible time
is a one-line error naming the file, line and field in ``check`` and ``report``, never a speedup computed from
it (a negative ``wall_time_s`` made pld 2.17x +-42 instead of 1.00x)."""
from __future__ import annotations

import pytest

from fault_helpers import DEFAULT_MANIFEST, cli, fake_run, record

IDS = [5, 6, 7, 8]


def _timed(**kw) -> dict:
    """pld's record on the question, with per-pass times (schema 4 fields) and ``kw`` changed."""
    base = record("pld", IDS, "exact", schema_version=4, prefill_time_s=0.02, verify_times_s=[0.02] * 4,
                  step_times_s=[0.02, 0.02, 0.02, 0.02], draft_depths=[0] * 4, draft_times_s=[0.0] * 4)
    return base | kw


@pytest.mark.parametrize("change, field", [
    ({"wall_time_s": -0.05}, "wall_time_s"),
    ({"draft_time_s": -1.0}, "draft_time_s"),
    ({"verify_time_s": -1e-3}, "verify_time_s"),
    ({"prefill_time_s": -0.01}, "prefill_time_s"),
    ({"step_times_s": [0.02, -0.02, 0.02, 0.02]}, "step_times_s"),
    ({"verify_times_s": [0.02, 0.02, -0.5, 0.02]}, "verify_times_s"),
    ({"draft_times_s": [0.0, -0.1, 0.0, 0.0]}, "draft_times_s"),
    ({"prefill_time_s": 0.5}, "prefill_time_s"),  # time to first token after the whole generation's end
    ({"draft_time_s": 0.4}, "draft_time_s"),  # more drafting than the whole generation took
    ({"batch_size": 2, "batch_wall_time_s": -0.2, "wall_time_s": 0.1}, "batch_wall_time_s"),
    ({"batch_size": 2, "batch_wall_time_s": 0.2, "admitted_s": 0.0, "finished_s": 0.3}, "finished_s"),
    ({"batch_size": 2, "batch_wall_time_s": 0.2, "admitted_s": 0.15, "finished_s": 0.1}, "admitted_s"),
])
@pytest.mark.parametrize("command", ["check", "report"])
def test_bad_timings_are_one_line_errors_naming_file_line_and_field(tmp_path, capsys, change, field, command):
    manifest = DEFAULT_MANIFEST
    if "batch_size" in change:
        manifest = {**DEFAULT_MANIFEST, "config": {**DEFAULT_MANIFEST["config"], "batch_size": [1, 2]}}
    run = fake_run(tmp_path / "r", [record("ar", IDS), _timed(**change)], manifest)
    code, err = cli([command, str(run)], capsys)
    assert code == 2 and f"records.jsonl:2: field '{field}'" in err, err


def test_sound_timings_still_read(tmp_path, capsys):
    run = fake_run(tmp_path / "r", [record("ar", IDS), _timed(),
                                    _timed(batch_size=2, batch_wall_time_s=0.2, admitted_s=0.0, finished_s=0.2,
                                           wall_time_s=0.1)],
                   {**DEFAULT_MANIFEST, "config": {**DEFAULT_MANIFEST["config"], "batch_size": [1, 2]}})
    assert cli(["report", str(run)], capsys)[0] == 0


def test_docstring_examples():
    import doctest

    import specbench.results.record_timings

    assert doctest.testmod(specbench.results.record_timings).failed == 0
