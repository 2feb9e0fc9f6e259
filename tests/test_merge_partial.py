"""``merge`` checks each shard against its plan and its lock (issue 44, item 5.2): a shard killed part-way (fewer
records than its manifest plans) or still running (its lock held) is refused in one line, and ``--partial``
merges it anyway, says so, and marks the merged manifest partial (``report`` then says it too)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fault_helpers import cli, cli_out
from specbench.run.lock import RunLock
from test_compare_merge import _split_into_shards
from test_stats import write_fake_run

TASKS = ("gsm8k", "humaneval")  # one turn each: every record the plan holds is counted from the manifest


def _shards(tmp_path: Path) -> list[Path]:
    full = write_fake_run(tmp_path / "full", {"pld": 1.5}, tasks=TASKS, n_questions=4)  # 8 questions x (ar, pld)
    return _split_into_shards(full, tmp_path / "shards", 2)


def _kill_part_way(shard: Path, keep: int) -> None:
    """The shard's process died after writing ``keep`` records (its manifest still plans them all)."""
    lines = (shard / "records.jsonl").read_text().splitlines(keepends=True)
    (shard / "records.jsonl").write_text("".join(lines[:keep]))


def test_a_shard_killed_part_way_is_refused_unless_partial(tmp_path, capsys):
    s1, s2 = _shards(tmp_path)
    _kill_part_way(s2, 5)
    out = tmp_path / "merged"
    code, err = cli(["merge", str(s1), str(s2), "--out", str(out)], capsys)
    assert code == 2 and "shard2of2" in err and "5 of 8 planned records" in err and "--partial" in err, err
    assert not out.exists()
    code, stdout, _ = cli_out(["merge", str(s1), str(s2), "--out", str(out), "--partial"], capsys)
    assert code == 0 and "PARTIAL" in stdout and "13 of 16 planned records" in stdout, stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["partial"]["records"] == 13 and manifest["partial"]["planned"] == 16
    assert any("shard2of2" in note for note in manifest["partial"]["shards"])
    code, stdout, _ = cli_out(["report", str(out)], capsys)
    assert code == 0 and "Partial run: 13 of 16 planned records" in stdout


def test_a_running_shard_is_refused_unless_partial(tmp_path, capsys):
    s1, s2 = _shards(tmp_path)
    with RunLock(s2):  # (its records are all there, but the process that holds its lock may write more)
        code, err = cli(["merge", str(s1), str(s2), "--out", str(tmp_path / "m1")], capsys)
        assert code == 2 and "shard2of2" in err and "still running" in err, err
        code, stdout, _ = cli_out(["merge", str(s1), str(s2), "--out", str(tmp_path / "m2"), "--partial"], capsys)
    assert code == 0 and "still running" in stdout
    assert json.loads((tmp_path / "m2" / "manifest.json").read_text())["partial"]["running"] == ["shard2of2"]


def test_complete_shards_merge_as_before(tmp_path, capsys):
    s1, s2 = _shards(tmp_path)
    code, stdout, _ = cli_out(["merge", str(s1), str(s2), "--out", str(tmp_path / "m")], capsys)
    assert code == 0 and "PARTIAL" not in stdout and "warning" not in stdout
    assert "partial" not in json.loads((tmp_path / "m" / "manifest.json").read_text())


@pytest.mark.parametrize("partial", [False, True])
def test_old_manifests_without_a_plan_are_merged_with_a_warning(tmp_path, capsys, partial):
    shards = _shards(tmp_path)
    for s in shards:  # manifests from before the plan's questions were recorded
        manifest = json.loads((s / "manifest.json").read_text())
        del manifest["questions"]
        (s / "manifest.json").write_text(json.dumps(manifest))
    code, stdout, _ = cli_out(["merge", *map(str, shards), "--out", str(tmp_path / "m"),
                               *(["--partial"] if partial else [])], capsys)
    assert code == 0 and "warning: shard1of2 lists no planned questions" in stdout, stdout
