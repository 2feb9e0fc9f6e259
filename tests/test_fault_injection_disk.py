"""Fault injection (issue 23, items 5-7): the run-folder lock under many concurrent takers, a full disk and
a read-only results folder. Disk faults are injected (``fs_faults``): tests may run as root.
"""
from __future__ import annotations

import errno
import json
import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fault_helpers import cli, cli_out, fake_run, record, run_args
from fs_faults import inject
from specbench.results.run_folder import read_records
from specbench.run.lock import LOCK_FILE, RunLock
from tiny_model_dir import save_tiny_model


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- 5: lock takeover races --------------------------------------------------------------------------
def _taker(run_dir: str, trials: int, start, attempted, released, results) -> None:
    """One of several processes taking over a dead owner's lock in each trial (forked by the test). Probing
    the owner's pid is slowed by a random fraction of a millisecond, so the takers interleave in every way
    (a correct scheme does not depend on timing)."""
    import random
    import time

    import specbench.run.lock as run_lock

    alive = run_lock._alive
    run_lock._alive = lambda pid: time.sleep(random.random() / 500) or alive(pid)
    sys.stderr = open(os.devnull, "w")  # the takeover message, once per trial
    for _ in range(trials):
        start.wait()
        lock = RunLock(run_dir)
        try:
            lock.acquire()
            won = True
        except Exception:  # the others are refused: a UserError
            won = False
        results.put(won)
        attempted.wait()  # everyone has tried while the winner holds it
        if won:
            lock.release()
        released.wait()


@pytest.mark.parametrize("takers", [3, 6])
def test_stale_lock_has_exactly_one_taker(tmp_path, takers):
    """A dead owner's lock found by several processes at once: in every trial exactly one takes it over (the
    old unlink-and-recreate takeover let two believe they owned it in about a quarter of the trials)."""
    ctx = multiprocessing.get_context("fork")
    trials = 30
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    start, attempted, released = (ctx.Barrier(takers + 1) for _ in range(3))
    results = ctx.Queue()
    procs = [ctx.Process(target=_taker, args=(str(run_dir), trials, start, attempted, released, results))
             for _ in range(takers)]
    for p in procs:
        p.start()
    stale = json.dumps({"pid": dead_pid(), "host": socket.gethostname()})
    winners = []
    try:
        for _ in range(trials):
            (run_dir / LOCK_FILE).write_text(stale)
            start.wait(timeout=60)
            attempted.wait(timeout=60)
            winners.append(sum(results.get(timeout=60) for _ in range(takers)))
            released.wait(timeout=60)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert winners == [1] * trials


def _churn(run_dir: str, seconds: float, holders, overlaps) -> None:
    import time

    end = time.time() + seconds
    while time.time() < end:
        lock = RunLock(run_dir)
        try:
            lock.acquire()
        except Exception:
            continue
        with holders.get_lock():
            holders.value += 1
            if holders.value > 1:
                overlaps.value += 1
        time.sleep(0.0005)
        with holders.get_lock():
            holders.value -= 1
        lock.release()


def test_lock_is_exclusive_while_released_and_retaken(tmp_path):
    """Processes locking and releasing one folder as fast as they can never hold it at the same time (a taker
    that opened the file just before its owner unlinked it must not lock the orphan)."""
    ctx = multiprocessing.get_context("fork")
    holders, overlaps = ctx.Value("i", 0), ctx.Value("i", 0)
    procs = [ctx.Process(target=_churn, args=(str(tmp_path), 1.5, holders, overlaps)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    assert overlaps.value == 0 and not (tmp_path / LOCK_FILE).exists()


def test_live_owner_refused_dead_owner_taken_over(tmp_path, capsys):
    run_dir = tmp_path / "run"
    with RunLock(run_dir):
        with pytest.raises(Exception, match=f"in use by pid {os.getpid()}"):
            RunLock(run_dir).acquire()
    (run_dir / LOCK_FILE).write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))
    with RunLock(run_dir):
        assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert "taking over a stale lock of dead pid" in capsys.readouterr().err
    (run_dir / LOCK_FILE).write_text("")  # an empty file left by a crash: no process holds it
    with RunLock(run_dir):
        pass
    assert not (run_dir / LOCK_FILE).exists()


# -- 6: disk full ------------------------------------------------------------------------------------
def test_disk_full_while_writing_records_then_resume(tiny_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    argv = run_args(tiny_dir, out, "r", 4)
    argv[argv.index("--limit") + 1] = "2"
    full = inject(monkeypatch, out, errno.ENOSPC, match="records.jsonl", after=1)
    code, err = cli(argv, capsys)
    assert code == 2 and err.splitlines()[-1].endswith(f"no space left on device while writing {out / 'r' / 'records.jsonl'}")
    assert [r.method for r in read_records(out / "r")] == ["ar"]  # what was written before stays readable
    assert not (out / "r" / LOCK_FILE).exists()
    full.off()  # space freed
    assert cli(argv, capsys)[0] == 0
    keys = [r.key for r in read_records(out / "r")]
    assert len(keys) == len(set(keys)) == 4


def test_disk_full_at_lock_creation_leaves_no_lock(tiny_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    full = inject(monkeypatch, out, errno.ENOSPC, match=LOCK_FILE)
    code, err = cli(run_args(tiny_dir, out), capsys)
    assert code == 2 and err.splitlines()[-1].endswith(f"no space left on device while writing {out / 'r' / LOCK_FILE}")
    assert not (out / "r").exists()  # no empty lock blocking the folder, and no empty folder
    full.off()
    assert cli(run_args(tiny_dir, out), capsys)[0] == 0


def test_disk_full_at_manifest(tiny_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    full = inject(monkeypatch, out, errno.ENOSPC, match="manifest.json")
    code, err = cli(run_args(tiny_dir, out), capsys)
    assert code == 2 and "no space left on device while writing" in err and "manifest.json" in err
    assert not (out / "r" / "manifest.json").exists() and not list((out / "r").glob("*.tmp"))
    full.off()
    assert cli(run_args(tiny_dir, out), capsys)[0] == 0


# -- 7: read-only results --------------------------------------------------------------------------
def test_writers_fail_in_one_line_on_a_read_only_folder(tiny_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert cli(run_args(tiny_dir, out, "done"), capsys)[0] == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    inject(monkeypatch, out, errno.EROFS)
    code, err = cli(run_args(tiny_dir, out, "new"), capsys)  # a new run
    assert code == 2 and "read-only file system while writing" in err
    code, err = cli(run_args(tiny_dir, out, "done", 6), capsys)  # another config into the archived folder
    assert code == 2
    code, err = cli(run_args(tiny_dir, out, "done"), capsys)  # a resume (nothing left to do, still a writer)
    assert code == 2 and "read-only file system while writing" in err and LOCK_FILE in err
    code, err = cli(["merge", str(out / "done"), str(out / "done"), "--out", str(out / "merged")], capsys)
    assert code == 2
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before


def test_read_only_commands_print_and_say_what_was_not_written(tiny_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert cli(run_args(tiny_dir, out, "done"), capsys)[0] == 0
    run = out / "done"
    (run / "report.md").unlink()
    inject(monkeypatch, out, errno.EROFS)
    code, printed, err = cli_out(["report", str(run)], capsys)
    assert code == 0 and "Speedup vs AR" in printed
    assert "could not write report.md, summary.json, summary.csv" in err and "read-only" in err
    code, printed, err = cli_out(["report", str(run), "--format", "json"], capsys)
    assert code == 0 and json.loads(printed)["methods"]
    assert not (run / "report.md").exists()
    code, printed, err = cli_out(["leaderboard", str(run), "--out", str(out / "lb"), "--no-plots", "--bootstrap", "50"],
                                 capsys)
    assert code == 0 and "could not write leaderboard.md, leaderboard.html" in err and "| pld" in printed
    assert not (out / "lb").exists()
    assert cli(["check", str(run)], capsys)[0] == 0
    assert cli(["compare", str(run), str(run), "--bootstrap", "50"], capsys)[0] == 0
    code, err = cli(["compare", str(run), str(run), "--bootstrap", "50", "--out", str(out / "c.md")], capsys)
    assert code == 2 and "read-only file system while writing" in err


def test_report_on_read_only_fake_run_prints_tables(tmp_path, capsys, monkeypatch):
    run = fake_run(tmp_path / "run", [record("ar", [1, 2]), record("pld", [1, 2], "exact")])
    inject(monkeypatch, tmp_path, errno.EROFS)
    assert cli(["report", str(run)], capsys)[0] == 0
