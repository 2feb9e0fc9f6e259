"""Fault injection (issue 12): every corrupt, ill-typed or conflicting input gives one line on stderr and
exit 2 (no traceback, nothing written where it must not be); one run folder is never shared by two
processes; a resumed run refuses changed weights or a lost manifest, and says so in one line when it resumes records
timed at another git commit (its tables would pool timings of two versions of the code).

Runs use a tiny random Llama saved with the embedded model's tokenizer, so they take a second each.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from fault_helpers import ROOT, cli, fake_run, flip_middle, record, run_args
from specbench.cli import main
from specbench.results.run_folder import read_records
from specbench.results.record import SCHEMA_VERSION
from specbench.run.guards import other_commit
from specbench.run.manifest import git_commit
from tiny_model_dir import save_tiny_model


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


# -- 1, 3: model hash and resume guards -------------------------------------------------------------
def test_resume_refuses_changed_weights_and_lost_manifest(tiny_dir, tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(tiny_dir, model)
    out = tmp_path / "results"
    assert cli(run_args(model, out), capsys)[0] == 0
    run_dir = out / "r"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert len(manifest["model"]["hash"]) == 16
    lines = (run_dir / "records.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "records.jsonl").write_text(lines[0])  # as if interrupted after the AR record
    flip_middle(model / "model.safetensors", keep_mtime=True)  # same size and mtime, only the middle differs
    code, err = cli(run_args(model, out), capsys)
    assert code == 2 and "weights changed" in err
    assert (run_dir / "records.jsonl").read_text() == lines[0]
    # a lost manifest: a different configuration must not resume into the old records
    (run_dir / "manifest.json").unlink()
    code, err = cli(run_args(model, out, "r", 6), capsys)
    assert code == 2 and "no manifest.json" in err
    assert not (run_dir / "manifest.json").exists()


def test_truncated_model_file(tiny_dir, tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(tiny_dir, model)
    f = model / "model.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    code, err = cli(run_args(model, tmp_path / "out"), capsys)
    assert code == 2 and "cannot load model" in err
    assert not (tmp_path / "out" / "r").exists()


# -- 2: run-folder lock ----------------------------------------------------------------------------
HOLD_LOCK = """
import sys, time
from specbench.run.lock import RunLock
with RunLock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_locked_run_folder_is_refused_and_stale_lock_taken_over(tiny_dir, tmp_path, capsys):
    from specbench.run.lock import LOCK_FILE, RunLock

    run_dir = tmp_path / "out" / "r"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        code, err = cli(run_args(tiny_dir, tmp_path / "out"), capsys)
        assert code == 2 and f"in use by pid {holder.pid}" in err
        assert sorted(p.name for p in run_dir.iterdir()) == [LOCK_FILE]
    finally:
        holder.communicate("\n", timeout=60)
    assert not (run_dir / LOCK_FILE).exists()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (run_dir / LOCK_FILE).write_text(json.dumps({"pid": dead.pid, "host": os.uname().nodename}))
    with RunLock(run_dir):
        assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert "stale lock" in capsys.readouterr().err


def test_two_processes_one_run_folder(tiny_dir, tmp_path):
    """The first process is paused while it holds the folder, so the second meets the lock for certain."""
    import signal

    args = [sys.executable, "-m", "specbench.cli", *run_args(tiny_dir, tmp_path, "same", 8)]
    args[args.index("--limit") + 1] = "3"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    lock = tmp_path / "same" / ".specbench.lock"
    deadline = time.time() + 120

    def owned() -> bool:  # (the file exists from open(), its pid only after the flock: wait for both)
        try:
            return json.loads(lock.read_text()).get("pid") == first.pid
        except (OSError, ValueError):
            return False

    while not owned() and first.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    first.send_signal(signal.SIGSTOP)
    try:
        assert owned(), "the first run finished before it could be paused"
        second = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    finally:
        first.send_signal(signal.SIGCONT)
    _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 2 and second.stderr.strip().splitlines()[-1].endswith("if that process is gone")
    assert f"is in use by pid {first.pid}" in second.stderr and "Traceback" not in second.stderr
    keys = [r.key for r in read_records(tmp_path / "same")]
    assert len(keys) == len(set(keys)) == 6  # 3 questions x (ar, pld), each written once
    assert not lock.exists()


# -- 4: artifacts verified on load -----------------------------------------------------------------
def tiny_rest_store(out: Path, vocab: int = 200) -> Path:
    from specbench.datastore.token_files import write_datastore

    rng = np.random.default_rng(0)
    entries = [rng.integers(0, vocab, size=50).tolist() for _ in range(20)]
    write_datastore(entries, out, vocab_size=vocab, meta={"corpora": ["t"]})
    return out


def test_rest_chunks_verified_on_load(tmp_path):
    from specbench.datastore.token_files import HEADER
    from specbench.datastore.suffix_array import DatastoreError, TokenDatastore

    ds = tiny_rest_store(tmp_path / "rest")
    TokenDatastore.load(ds)
    flip_middle(ds / "chunk_000.sa.npy", 64)
    with pytest.raises(DatastoreError, match=r"chunk_000\.sa\.npy: content does not match.*rebuild"):
        TokenDatastore.load(ds)
    ds = tiny_rest_store(tmp_path / "rest2")
    header = json.loads((ds / HEADER).read_text())
    (ds / HEADER).write_text(json.dumps({**header, "vocab_size": 10}))  # tokens now outside the vocabulary
    with pytest.raises(DatastoreError, match="outside the vocabulary"):
        TokenDatastore.load(ds)
    (ds / HEADER).write_text(json.dumps({**header, "chunks": 5}))
    with pytest.raises(DatastoreError, match="malformed"):
        TokenDatastore.load(ds)


def test_crest_store_verified_on_load(tmp_path):
    from specbench.datastore.ngram_store import DB, NgramStore, write_ngram_store
    from specbench.datastore.suffix_array import DatastoreError, TokenDatastore

    src = TokenDatastore.load(tiny_rest_store(tmp_path / "rest"))
    write_ngram_store(src, tmp_path / "crest", top_t=20, max_n=2, k=4, m=3, c=6)
    NgramStore(tmp_path / "crest").close()
    flip_middle(tmp_path / "crest" / DB, 512)
    with pytest.raises(DatastoreError, match="db_sha256"):
        NgramStore(tmp_path / "crest")


@pytest.mark.parametrize("damage", ["truncated", "bad header", "bad config", "extra key", "wrong shape", "flipped"])
def test_corrupt_redrafter_checkpoint(tmp_path, damage):
    from safetensors.torch import load_file, save_file

    from specbench_methods.redrafter.checkpoint import CONFIG, WEIGHTS, load_checkpoint, save_checkpoint
    from specbench_methods.redrafter.config import HeadConfig
    from specbench_methods.redrafter.head import DraftHead
    from specbench.errors import DatastoreError

    ckpt = save_checkpoint(DraftHead(HeadConfig(hidden_size=8, embed_dim=4, vocab_size=16, proj_dim=8, num_blocks=1)),
                           tmp_path / "ckpt")
    load_checkpoint(ckpt)
    w, c = ckpt / WEIGHTS, ckpt / CONFIG
    meta = json.loads(c.read_text())
    if damage == "truncated":
        w.write_bytes(w.read_bytes()[:100])
    elif damage == "bad header":
        w.write_bytes(b"\xff" * 8 + w.read_bytes()[8:])
    elif damage == "bad config":
        c.write_text("{not json")
    elif damage == "flipped":
        flip_middle(w, 16)
    else:
        state = load_file(str(w))
        if damage == "extra key":
            state["bogus"] = torch.zeros(1)
        else:
            name = next(iter(state))
            state[name] = torch.zeros(3, 3)
        save_file(state, str(w))
        c.write_text(json.dumps({k: v for k, v in meta.items() if k != "weights_sha256"}))
    with pytest.raises(DatastoreError, match="(corrupt|does not match|not valid JSON)"):
        load_checkpoint(ckpt)


# -- 5, 8, 9: one-line errors for ill-typed inputs -------------------------------------------------
BAD_RECORD_LINES = {
    "newer schema": record("pld", [1, 2], "exact", schema_version=SCHEMA_VERSION + 1),
    "missing field": {k: v for k, v in record("pld", [1, 2], "exact").items() if k != "turn"},
    "not an object": [1, 2, 3],
    "string time": record("pld", [1, 2], "exact", wall_time_s="fast"),
    "bad json": '{"method": "pld", "task"',
}


@pytest.mark.parametrize("what", list(BAD_RECORD_LINES))
@pytest.mark.parametrize("command", ["report", "check"])
def test_bad_record_line_names_file_and_line(tmp_path, capsys, command, what):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2]), BAD_RECORD_LINES[what], record("pld", [1, 2], "exact")])
    code, err = cli([command, str(run)], capsys)
    assert code == 2 and "records.jsonl:2:" in err
    assert not (run / "report.md").exists()


@pytest.mark.parametrize("command", ["report", "check", "compare", "leaderboard", "merge"])
def test_malformed_manifest(tmp_path, capsys, command):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2])], manifest="{oops")
    argv = {"report": ["report", str(run)], "check": ["check", str(run)], "compare": ["compare", str(run), str(run)],
            "leaderboard": ["leaderboard", str(run), "--out", str(tmp_path / "lb"), "--no-plots"],
            "merge": ["merge", str(run), str(run), "--out", str(tmp_path / "merged")]}[command]
    code, err = cli(argv, capsys)
    assert code == 2 and "manifest.json: not a valid manifest" in err
    assert not (tmp_path / "lb").exists() and not (tmp_path / "merged").exists()


def test_check_rederives_the_lossless_class(tmp_path, capsys):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2, 3]), record("pld", [1, 9, 3], "exact")])
    code = main(["check", str(run), "--ids"])
    out = capsys.readouterr().out
    assert code == 1 and "RELABELLED" in out and "pld: 0 exact, 0 tie, 1 mismatch" in out


@pytest.mark.parametrize("yaml_text, needle", [
    ("limit: 1.7\n", "expected an integer, got 1.7"),
    ("limit: true\n", "expected int, got True"),
    ("model: null\n", "model: must not be null"),
    ("out_dir: null\n", "out_dir: must not be null"),
    ("method_options: {pld: 5}\n", "method_options.pld: expected a mapping"),
    ("run_name: ../../x\n", "--run-name must be a single folder name"),
])
def test_ill_typed_yaml(tmp_path, capsys, monkeypatch, yaml_text, needle):
    monkeypatch.chdir(tmp_path)
    # flags would override the YAML, so the guards against a real run (should the check be missing) are in it
    guards = {"tasks": "[gsm8k]", "limit": "1", "max_new_tokens": "1", "model": str(tmp_path / "no-model")}
    key = yaml_text.split(":")[0]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml_text + "".join(f"{k}: {v}\n" for k, v in guards.items() if k != key))
    code, err = cli(["run", "--config", str(cfg)], capsys)
    assert code == 2 and needle in err
    assert not (tmp_path / "results").exists() and not (tmp_path / "None").exists()
    assert not (tmp_path.parent / "x").exists()


def test_bad_files_and_values(tmp_path, capsys):
    (tmp_path / "bin.yaml").write_bytes(b"limit: \xff\xfe\n")
    bad_q = tmp_path / "data" / "spec_bench"
    bad_q.mkdir(parents=True)
    (bad_q / "question.jsonl").write_bytes(b'{"category": "qa", "turns": ["\xff"]}\n')
    dup = tmp_path / "dup" / "spec_bench"
    dup.mkdir(parents=True)
    row = {"question_id": 7, "category": "qa", "turns": ["hi"]}
    (dup / "question.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    (tmp_path / "bad.json").write_text('{"schema": 1}')
    (tmp_path / "file").write_text("x")
    run = fake_run(tmp_path / "run", [record("ar", [1])])
    cases = [
        (["run", "--config", str(tmp_path / "bin.yaml")], "not UTF-8"),
        (["run", "--tasks", "nq", "--data-dir", str(tmp_path / "data")], "not UTF-8"),
        (["run", "--tasks", "nq", "--data-dir", str(tmp_path / "dup")], "duplicate question id(s) 7"),
        (["run", "--run-name", "/tmp/abs"], "--run-name must be a single folder name"),
        (["run", "--run-name", ".."], "--run-name must be a single folder name"),
        (["leaderboard", str(run), "--out", str(tmp_path / "lb"), "--profile", str(tmp_path / "bad.json")],
         "not a specbench profile"),
        (["leaderboard", str(run), "--out", str(tmp_path / "file")], "exists and is not a folder"),
        (["leaderboard", str(run), "--out", str(tmp_path / "lb"), "--bootstrap", "-3"], "expected a positive integer"),
        (["merge", str(run), "--out", str(tmp_path / "file")], "exists and is not a folder"),
        (["profile", "--context", "-5"], "expected a positive integer, got -5"),
        (["profile", "--repeats", "0"], "expected a positive integer, got 0"),
        (["datastore", "build", "--kind", "rest", "--corpus", "sharegpt", "--out", str(tmp_path / "ds"),
          "--set", "chunk_tokens=abc"], "chunk_tokens expects an integer"),
        (["datastore", "build", "--kind", "rest", "--corpus", "sharegpt", "--out", str(tmp_path / "ds"),
          "--max-tokens", "-5"], "expected a positive integer, got -5"),
        (["datastore", "build", "--kind", "rest", "--corpus", "sharegtp", "--out", str(tmp_path / "ds")],
         "did you mean 'sharegpt'"),
        (["train", "redrafter", "--corpus", "sharegpt", "--out", str(tmp_path / "hd"), "--lr", "-1"],
         "expected a positive number"),
    ]
    for argv, needle in cases:
        code, err = cli(argv, capsys)
        assert code == 2 and needle in err, (argv, err)
    assert not (tmp_path / "lb").exists() and not (tmp_path / "ds").exists() and not (tmp_path / "hd").exists()
    assert not list(tmp_path.rglob("*.lock"))  # the misspelled corpus failed before any build lock


# -- 7: context length -----------------------------------------------------------------------------
def test_context_checked_before_the_model_runs(tmp_path, capsys):
    model = save_tiny_model(tmp_path / "short", context=256)
    code, err = cli(run_args(model, tmp_path / "out", "r", 200), capsys)
    assert code == 2 and "exceeds the model's context of 256 tokens" in err
    assert not (tmp_path / "out" / "r").exists()


def test_zero_timings_give_no_speedup_and_no_warning():
    import warnings

    from specbench.results.stats import paired_speedup

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert paired_speedup([np.array([[4.0, 0.0, 4.0, 0.0], [4.0, 0.0, 4.0, 0.0]])]) == (None, None, None)


def test_unknown_hub_model_fails_in_one_line_at_once() -> None:
    import time as _time

    from specbench.models.loading import ModelLoadError, load_model

    start = _time.perf_counter()
    with pytest.raises(ModelLoadError, match="no-such-specbench-model") as err:
        load_model("no-such-specbench-model-0xdead", "float32", "cpu")
    assert "\n" not in str(err.value) and _time.perf_counter() - start < 20  # not a minute of retries


def test_hub_model_hash_covers_its_cached_weights(tiny_dir, tmp_path, monkeypatch):
    import shutil

    from specbench.models.loading import load_model

    hub = tmp_path / "hub"
    snap = hub / "models--acme--tiny" / "snapshots" / ("0" * 40)
    shutil.copytree(tiny_dir, snap)
    (hub / "models--acme--tiny" / "refs").mkdir()
    (hub / "models--acme--tiny" / "refs" / "main").write_text("0" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    first = load_model("acme/tiny", "float32", "cpu").model_hash
    flip_middle(next(snap.glob("*.safetensors")))
    assert load_model("acme/tiny", "float32", "cpu").model_hash != first  # content, not the name


# -- a resume at another git commit ----------------------------------------------------------------
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
