"""Robustness findings of a held-out probe (issue 44, item 5): each input ends in one line and exit 2, never a
traceback, a hang or a wrong label.

1. a shard with no questions (``--shard 2/2 --limit 1``; ``launch`` with more shards than questions);
2. JSON nested 100,000 deep (question files, ``records.jsonl``, ``manifest.json``, checkpoints, caches);
3. a manifest with NaN / Infinity, or without its ``config``;
4. a ``--batch-size`` larger than a task's questions (it would label batches of 2 as B=1000);
5. the ``.tmp-PID`` folder a killed datastore build leaves behind (removed at the next build when its process
   is gone; never a live one's).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fault_helpers import DEFAULT_MANIFEST, cli, fake_run, record
from specbench.config.run_config import RunConfig
from specbench.errors import ConfigError, DatastoreError, TaskDataError
from specbench.run.plan import make_plan
from test_custom_tasks import write_jsonl

DEEP = "[" * 100_000 + "]" * 100_000  # Python's json recurses once per level: a RecursionError before the fix
OPEN = "[" * 100_000  # the same, never closed


def _questions(path: Path, n: int) -> Path:
    return write_jsonl(path, [{"id": f"q{i}", "turns": [f"Say {i}."]} for i in range(n)])


# -- 1: shards without questions ---------------------------------------------------------------------
@pytest.mark.parametrize("limit, shards, needle", [
    (1, (2, 2), "--shard 2/2: 1 question cannot fill 2 shards"),
    (1, (1, 2), "--shard 1/2: 1 question cannot fill 2 shards"),
    (3, (4, 4), "--shard 4/4: 3 questions cannot fill 4 shards"),
])
def test_a_shard_without_questions_is_refused_by_the_plan(tmp_path, limit, shards, needle):
    with pytest.raises(ConfigError, match=needle):
        make_plan(RunConfig(tasks=("gsm8k",), limit=limit, out_dir=str(tmp_path)), shards)
    # questions of two tasks together fill the shards: the slices are taken over (task, question) pairs
    plan = make_plan(RunConfig(tasks=("gsm8k", "wmt"), limit=1, out_dir=str(tmp_path)), (2, 2))
    assert sum(map(len, plan.questions.values())) == 1


def test_run_of_an_empty_shard_is_one_line(tmp_path, capsys):
    code, err = cli(["run", "--model", str(tmp_path / "none"), "--tasks", "gsm8k", "--limit", "1", "--shard", "2/2",
                     "--out-dir", str(tmp_path / "out"), "--no-progress"], capsys)
    assert code == 2 and "--shard 2/2: 1 question cannot fill 2 shards" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("how", ["--ray", "--slurm"])
def test_launch_with_more_shards_than_questions_is_refused_up_front(tmp_path, capsys, how):
    prompts = _questions(tmp_path / "one.jsonl", 1)
    out = tmp_path / "runs" / "full"
    code, err = cli(["launch", how, "--shards", "2", "--out", str(out), "--", "--tasks", f"jsonl:{prompts}",
                     "--model", str(tmp_path / "none")], capsys)
    assert code == 2 and "1 question cannot fill 2 shards" in err, err
    assert not (tmp_path / "runs").exists()  # no scripts, no shard folders


# -- 2: deeply nested JSON ----------------------------------------------------------------------------
@pytest.mark.parametrize("line", [DEEP, OPEN, '{"id": "x", "turns": ' + DEEP + "}"])
def test_deeply_nested_question_file_is_one_line(tmp_path, capsys, line):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "turns": ["Hi"]}, line])
    code, err = cli(["run", "--model", str(tmp_path / "none"), "--tasks", f"jsonl:{path}", "--out-dir",
                     str(tmp_path / "out")], capsys)
    assert code == 2 and f"{path}:2: " in err, err
    assert "nested too deeply" in err or "malformed JSON" in err or "'turns'" in err


def test_deeply_nested_spec_bench_question_file(tmp_path):
    from specbench.plugins.registry import make_task

    (tmp_path / "spec_bench").mkdir()
    (tmp_path / "spec_bench" / "question.jsonl").write_text(DEEP + "\n")
    with pytest.raises(TaskDataError, match=r"question.jsonl:1: JSON nested too deeply"):
        make_task("nq").load(tmp_path)


@pytest.mark.parametrize("command", ["report", "check"])
@pytest.mark.parametrize("line", [DEEP, OPEN])
def test_deeply_nested_record_line_is_one_line(tmp_path, capsys, command, line):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2]), line, record("pld", [1, 2], "exact")])
    code, err = cli([command, str(run)], capsys)
    assert code == 2 and "records.jsonl:2: JSON nested too deeply" in err, err


def test_deeply_nested_last_line_is_not_taken_for_a_torn_write(tmp_path, capsys):
    # (a torn line is an interrupted write of a flat record: it is skipped; this one is an error)
    run = fake_run(tmp_path / "run", [record("ar", [1, 2]), record("pld", [1, 2], "exact")])
    with (run / "records.jsonl").open("a") as fh:
        fh.write(OPEN)
    code, err = cli(["report", str(run)], capsys)
    assert code == 2 and "records.jsonl:3: JSON nested too deeply" in err, err


@pytest.mark.parametrize("command", ["report", "check"])
def test_deeply_nested_manifest_is_one_line(tmp_path, capsys, command):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2])], manifest='{"config": ' + DEEP + "}")
    code, err = cli([command, str(run)], capsys)
    assert code == 2 and "manifest.json: not a valid manifest (JSON nested too deeply" in err, err


@pytest.mark.parametrize("text, needle", [(DEEP, "nested too deeply"), ("{oops", "malformed JSON"),
                                          ("[1, 2]", "expected a JSON object, got list"), (b"\xff\xfe", "not UTF-8")])
def test_read_json_names_the_file(tmp_path, text, needle):
    from specbench.files.jsonfile import read_json

    path = tmp_path / "x.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError, match=f"{path}: not a thing \\(.*{needle}"):
        read_json(path, "thing")


CHECKPOINT_READERS = {"eagle": "load_layer", "eagle3": "load_draft", "medusa": "load_heads", "hydra": "load_heads",
                      "redrafter": "load_checkpoint"}


@pytest.mark.parametrize("method", list(CHECKPOINT_READERS))
@pytest.mark.parametrize("text", [DEEP, "{oops", "[]"])
def test_damaged_checkpoint_config_is_one_line(tmp_path, method, text):
    import importlib

    mod = importlib.import_module(f"specbench_methods.{method}.checkpoint")
    (tmp_path / "config.json").write_text(text)
    (tmp_path / "head.safetensors").write_bytes(b"")  # (redrafter's reader wants its weights file present)
    read = getattr(mod, CHECKPOINT_READERS[method])
    with pytest.raises(ConfigError, match=str(tmp_path)):  # (specbench.files.checkpoint_files: one line naming it)
        read(tmp_path, None)


def test_deeply_nested_corpus_and_other_user_json(tmp_path):
    import gzip

    from specbench.datastore.corpora import gsm8k_train_pairs, read_gz_jsonl
    from specbench.models.context import declared_context
    from specbench.run.lock import _owner

    (tmp_path / "gsm8k").mkdir()
    (tmp_path / "gsm8k" / "train.jsonl").write_text('{"question": "q", "answer": "a"}\n' + DEEP + "\n")
    with pytest.raises(DatastoreError, match=r"train.jsonl:2: JSON nested too deeply"):
        list(gsm8k_train_pairs(tmp_path))
    with gzip.open(tmp_path / "c.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(OPEN + "\n")
    with pytest.raises(DatastoreError, match=r"c.jsonl.gz:1: JSON nested too deeply"):
        list(read_gz_jsonl(tmp_path / "c.jsonl.gz"))
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(DEEP)
    assert declared_context(str(tmp_path / "model")) is None  # unreadable: the context is unknown, no crash
    (tmp_path / "lock").write_text(DEEP)
    assert _owner(tmp_path / "lock") is None


def test_damaged_cached_batch_profile_is_one_line(tmp_path):
    from specbench.profiling.batch_profile import load_batch_costs

    path = tmp_path / "batch.json"
    for text in (DEEP, "{oops", '{"batch_curves": {"2": {"128": {"1": 0.01}}}}'):
        path.write_text(text)
        if text.startswith("{\"batch"):
            assert load_batch_costs(path)["batch_curves"]  # a good file reads (it raised TypeError before)
        else:
            with pytest.raises(ConfigError, match=str(path)):
                load_batch_costs(path)


def test_deeply_nested_imported_texts(tmp_path):
    from specbench.interop.spec_bench_import import TEXT_FILE, read_texts
    from specbench.results.run_folder import RunFileError

    (tmp_path / TEXT_FILE).write_text(DEEP + "\n")
    with pytest.raises(RunFileError, match=f"{TEXT_FILE}:1: JSON nested too deeply"):
        read_texts(tmp_path)


# -- 3: the manifest's own content --------------------------------------------------------------------
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("command", ["report", "check"])
def test_non_finite_manifest_is_refused(tmp_path, capsys, command, constant):
    text = json.dumps(DEFAULT_MANIFEST | {"config": {**DEFAULT_MANIFEST["config"], "max_new_tokens": "X"}})
    run = fake_run(tmp_path / "run", [record("ar", [1, 2]), record("pld", [1, 2], "exact")],
                   text.replace('"X"', constant))
    code, err = cli([command, str(run)], capsys)
    assert code == 2 and f"manifest.json: not a valid manifest ({constant} is not a number JSON allows" in err, err
    assert not (run / "report.md").exists()


@pytest.mark.parametrize("manifest, needle", [
    ({"config_digest": "x", "questions": {"gsm8k": ["1"]}}, "missing its 'config'"),
    ({"config": {"dtype": "float32"}, "questions": {"gsm8k": ["1"]}}, "missing 'config.methods'"),
])
@pytest.mark.parametrize("command", ["report", "check"])
def test_manifest_without_its_config_is_refused(tmp_path, capsys, command, manifest, needle):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2]), record("pld", [1, 2], "exact")], manifest)
    code, err = cli([command, str(run)], capsys)
    assert code == 2 and "manifest.json: not a valid manifest" in err and needle in err, err


# -- 4: batch sizes larger than a task's questions ------------------------------------------------------
@pytest.mark.parametrize("sizes, limit, needle", [
    ((1000,), 2, "--batch-size 1000: task gsm8k has 2 questions in this run"),
    ((1, 2, 4), 3, "--batch-size 4: task gsm8k has 3 questions in this run"),
])
def test_batch_size_above_the_questions_is_refused(tmp_path, sizes, limit, needle):
    with pytest.raises(ConfigError, match=needle):
        make_plan(RunConfig(tasks=("gsm8k",), limit=limit, batch_size=sizes, out_dir=str(tmp_path)))
    fits = tuple(s for s in sizes if s <= limit) or (limit,)
    make_plan(RunConfig(tasks=("gsm8k",), limit=limit, batch_size=fits, out_dir=str(tmp_path)))


def test_batch_size_is_checked_against_every_task_and_every_shard(tmp_path):
    one = _questions(tmp_path / "one.jsonl", 1)
    with pytest.raises(ConfigError, match=f"--batch-size 2: task jsonl:{one} has 1 question in this run"):
        make_plan(RunConfig(tasks=("gsm8k", f"jsonl:{one}"), limit=4, batch_size=(2,), out_dir=str(tmp_path)))
    # 5 questions over 2 shards: shard 1 gets 3, shard 2 gets 2; a batch of 3 fits only shard 1, so every shard refuses
    cfg = RunConfig(tasks=("gsm8k",), limit=5, batch_size=(3,), out_dir=str(tmp_path))
    for k in (1, 2):
        with pytest.raises(ConfigError, match=r"--batch-size 3: task gsm8k has 2 questions in shard 2/2"):
            make_plan(cfg, (k, 2))
    make_plan(RunConfig(tasks=("gsm8k",), limit=5, batch_size=(2,), out_dir=str(tmp_path)), (2, 2))


def test_batch_size_above_the_questions_is_one_line(tmp_path, capsys):
    code, err = cli(["run", "--model", str(tmp_path / "none"), "--tasks", "gsm8k", "--limit", "2", "--batch-size",
                     "1000", "--out-dir", str(tmp_path / "out")], capsys)
    assert code == 2 and "--batch-size 1000: task gsm8k has 2 questions in this run" in err, err
    prompts = _questions(tmp_path / "four.jsonl", 4)
    code, err = cli(["launch", "--slurm", "--shards", "2", "--out", str(tmp_path / "runs" / "r"), "--",
                     "--tasks", f"jsonl:{prompts}", "--batch-size", "3"], capsys)
    assert code == 2 and "has 2 questions in shard" in err and not (tmp_path / "runs").exists(), err


# -- 5: stale .tmp-PID folders of killed builds ------------------------------------------------------------
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_build_removes_stale_tmp_folders_of_dead_processes_only(tmp_path):
    import socket

    from specbench.datastore.token_files import write_datastore

    dead = _dead_pid()
    parent = tmp_path / "datastores"
    parent.mkdir()
    stale = [parent / f".old.tmp-{dead}", parent / f".other.tmp-{dead}-{socket.gethostname()}"]
    live = [parent / f".busy.tmp-{os.getpid()}", parent / f".busy.tmp-{os.getppid()}-{socket.gethostname()}",
            parent / f".remote.tmp-{dead}-another-host.example"]  # another machine's pid says nothing here
    for d in stale + live:
        d.mkdir()
        (d / "chunk_000.tokens.npy").write_bytes(b"x" * 100)
    (parent / f".old.tmp-{dead}.txt").write_text("not ours")
    write_datastore([[1, 2, 3, 4], [2, 3, 4, 5]], parent / "ds", vocab_size=8, meta={})
    assert (parent / "ds" / "header.json").is_file()
    assert not any(d.exists() for d in stale)
    assert all(d.is_dir() for d in live) and (parent / f".old.tmp-{dead}.txt").exists()


def test_stale_tmp_helper(tmp_path):
    from specbench.files.stale_tmp import remove_stale_tmp, tmp_sibling

    dead = _dead_pid()
    mine = tmp_sibling(tmp_path / "ngrams.sqlite")
    assert mine.parent == tmp_path and mine.name.startswith(f".ngrams.sqlite.tmp-{os.getpid()}")
    mine.write_text("live")
    old_db = tmp_path / f".ngrams.sqlite.tmp-{dead}"
    old_db.write_text("dead")
    (tmp_path / f".ngrams.sqlite.tmp-{dead}-journal").write_text("its sqlite journal")
    assert sorted(p.name for p in remove_stale_tmp(tmp_path)) == sorted([old_db.name, old_db.name + "-journal"])
    assert mine.exists() and remove_stale_tmp(tmp_path / "missing") == []


def test_docstring_examples():
    import doctest

    import specbench.files.jsonfile
    import specbench.files.stale_tmp
    import specbench.run.question_counts

    for mod in (specbench.files.jsonfile, specbench.files.stale_tmp, specbench.run.question_counts):
        assert doctest.testmod(mod).failed == 0, mod.__name__
