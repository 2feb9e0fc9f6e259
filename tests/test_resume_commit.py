"""A run folder resumed under another git commit says so in one line (its tables would pool timings of two
versions of the code), and goes on; at the same commit it says nothing.

Runs use a tiny random Llama saved with the embedded model's tokenizer, so they take a second each.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fault_helpers import cli, run_args
from specbench.run.guards import other_commit
from specbench.run.manifest import git_commit
from tiny_model_dir import save_tiny_model


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_resume_at_another_commit_warns_once_per_resume(tiny_dir, tmp_path, capsys):
    out = tmp_path / "results"
    code, err = cli(run_args(tiny_dir, out), capsys)
    assert code == 0 and "now resumed at git" not in err
    run_dir = out / "r"
    records = run_dir / "records.jsonl"
    lines = records.read_text().splitlines(keepends=True)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["git_commit"] = "0" * 40  # as if the first part ran at an older commit
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    records.write_text(lines[0])  # interrupted after the AR record
    code, err = cli(run_args(tiny_dir, out), capsys)
    if git_commit() is None:  # (outside a git checkout nothing can be compared)
        assert code == 0 and "resumed at git" not in err
        return
    assert code == 0 and "holds records timed at git 000000000000, now resumed at git" in err
    assert len(records.read_text().splitlines()) == len(lines)  # and the run went on
    records.write_text(lines[0])  # interrupted again, resumed at this same commit: the first part's commit is known
    code, err = cli(run_args(tiny_dir, out), capsys)
    assert code == 0 and "resumed at git" not in err


def test_other_commit_needs_records_and_a_manifest(tmp_path):
    assert other_commit(tmp_path, "abc") is None
    (tmp_path / "manifest.json").write_text(json.dumps({"git_commit": "def"}))
    assert other_commit(tmp_path, "abc") is None  # no records yet: nothing would be pooled
    assert other_commit(tmp_path, None) is None  # outside a git checkout: nothing to compare
