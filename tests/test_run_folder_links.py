"""A run folder's files are regular files the run created (issue 44, item 5.1): a ``records.jsonl`` or lock file
that is a symbolic link, a hard link or a FIFO is refused in one line before anything is truncated or written, so
a resumed run can never cut or append to a file elsewhere (a token file the link points at)."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from fault_helpers import cli, run_args
from specbench.results.run_folder import RECORDS_FILE, RecordWriter, RunFileError
from specbench.run.guards import check_run_folder
from specbench.run.lock import LOCK_FILE, RunLock
from specbench.config.run_flags import add_run_arguments, config_from_args
from specbench.errors import ConfigError
from specbench.run.plan import config_digest, make_plan
from test_custom_tasks import write_jsonl
from tiny_model_dir import save_tiny_model

SECRET = "hf_do_not_touch_this_token"  # one line, no newline: what a resume took for a torn last line


def _token(tmp_path: Path) -> Path:
    token = tmp_path / "elsewhere" / "token"
    token.parent.mkdir()
    token.write_text(SECRET)
    return token


def test_resume_refuses_a_records_file_that_is_a_symbolic_link(tmp_path, capsys):
    # the folder of an earlier run (its manifest) whose records.jsonl now points elsewhere; the refusal comes
    # before the model loads, so no model is needed here
    prompts = write_jsonl(tmp_path / "q.jsonl", [{"id": "q0", "turns": ["Say one."]}])
    argv = ["run", "--model", str(tmp_path / "no-model"), "--tasks", f"jsonl:{prompts}", "--methods", "pld",
            "--out-dir", str(tmp_path / "out"), "--run-name", "r", "--no-progress", "--device", "cpu"]
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    digest = config_digest(make_plan(config_from_args(parser.parse_args(argv[1:]))))
    run = tmp_path / "out" / "r"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"config": {"methods": ["ar", "pld"]}, "config_digest": digest}))
    token = _token(tmp_path)
    (run / RECORDS_FILE).symlink_to(token)
    code, err = cli(argv, capsys)
    assert code == 2 and "symbolic link" in err and str(run / RECORDS_FILE) in err, err
    assert token.read_text() == SECRET and (run / RECORDS_FILE).is_symlink()


def test_resume_of_a_real_run_refuses_the_link(tmp_path, capsys):
    model = save_tiny_model(tmp_path / "model")  # (skipped where the embedded model's tokenizer is not cached)
    out = tmp_path / "out"
    assert cli(run_args(model, out), capsys)[0] == 0
    records = out / "r" / RECORDS_FILE
    records.unlink()
    token = _token(tmp_path)
    records.symlink_to(token)
    code, err = cli(run_args(model, out), capsys)
    assert code == 2 and "symbolic link" in err and str(records) in err
    assert token.read_text() == SECRET and records.is_symlink()


@pytest.mark.parametrize("name", [RECORDS_FILE, "manifest.json", LOCK_FILE])
def test_check_run_folder_refuses_links_to_run_files(tmp_path, name):
    run = tmp_path / "r"
    run.mkdir()
    (run / name).symlink_to(_token(tmp_path))
    with pytest.raises(ConfigError, match=f"{name} is a symbolic link"):
        check_run_folder(run)


def test_record_writer_refuses_links_and_fifos_and_leaves_them_alone(tmp_path):
    token = _token(tmp_path)
    for make, what in ((lambda p: p.symlink_to(token), "symbolic link"), (lambda p: os.link(token, p), "hard links"),
                       (lambda p: os.mkfifo(p), "not a regular file")):
        run = tmp_path / f"r_{what.replace(' ', '_')}"
        run.mkdir()
        make(run / RECORDS_FILE)
        with pytest.raises(RunFileError, match=what):
            RecordWriter(run)
        assert token.read_text() == SECRET
    run = tmp_path / "plain"
    with RecordWriter(run):  # an absent file is created, a regular one appended to
        pass
    from specbench.results.run_folder import check_run_file

    check_run_file(run / RECORDS_FILE)


def test_lock_refuses_a_lock_file_that_is_a_link(tmp_path):
    token = _token(tmp_path)
    run = tmp_path / "r"
    run.mkdir()
    (run / LOCK_FILE).symlink_to(token)
    with pytest.raises(RunFileError, match="symbolic link"):
        RunLock(run).acquire()
    (run / LOCK_FILE).unlink()
    os.link(token, run / LOCK_FILE)
    with pytest.raises(RunFileError, match="hard links"):
        RunLock(run).acquire()
    assert token.read_text() == SECRET


def test_torn_tail_still_repaired_through_the_descriptor(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / RECORDS_FILE).write_bytes(b'{"a": 1}\n{"torn')
    with RecordWriter(run):
        pass
    assert (run / RECORDS_FILE).read_bytes() == b'{"a": 1}\n'
