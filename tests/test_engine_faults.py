"""An engine under test end to end on a stand-in server (``fake_llama_server.py``) and a tiny model: records,
lossless verdicts, counters and reports; and every fault (dies, hangs, garbage, refuses, never ready, bad ids, an
impostor on its port, settings it does not serve, keep-alive comments forever, a line over the cap) as a one-line
error with the records done so far kept and no server left running."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.results.run_folder import read_records
from json_schema_subset import validate
from tiny_model_dir import save_tiny_model

FAKE = Path(__file__).resolve().parent / "fake_llama_server.py"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A llama-server binary that is the stand-in, its pids written to ``pids``."""
    pids = tmp_path / "pids"
    binary = tmp_path / "llama-server"
    binary.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@" --pid-file {pids}\n')
    binary.chmod(0o755)
    monkeypatch.setenv("SPECBENCH_LLAMA_SERVER", str(binary))
    model = save_tiny_model(tmp_path / "model")
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"GGUF")
    return {"pids": pids, "model": model, "gguf": gguf, "out": tmp_path / "res"}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def no_server_left(pids: Path, wait: float = 5.0) -> bool:
    started = [int(p) for p in pids.read_text().split()] if pids.is_file() else []
    deadline = time.monotonic() + wait
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(started) and not any(alive(p) for p in started)


def run(fake, capsys, *extra: str, methods: str = "engine:ngram", limit: str = "2") -> tuple[int, str, Path]:
    name = "r"
    argv = ["run", "--model", str(fake["model"]), "--tasks", "gsm8k", "--limit", limit, "--max-new-tokens", "12",
            "--warmup", "0", "--engine", "llama-server", "--methods", methods, "--engine-opt",
            f"model={fake['gguf']}", "--out-dir", str(fake["out"]), "--run-name", name, "--no-progress", *extra]
    code = main(argv)
    return code, capsys.readouterr().err, fake["out"] / name


def test_engine_rows_end_to_end(fake, capsys) -> None:
    code, err, run_dir = run(fake, capsys, "--concurrency", "1,2")
    assert code == 0, err
    recs = read_records(run_dir)
    by = {}
    for r in recs:
        by.setdefault((r.method, r.unit.batch), []).append(r)
    assert set(by) == {("ar", 1), ("engine:off", 1), ("engine:ngram", 1), ("engine:off", 2), ("engine:ngram", 2)}
    spec = by[("engine:ngram", 1)]
    assert all(r.lossless_class == "exact" for r in spec + by[("engine:ngram", 2)] + by[("engine:off", 2)])
    # the stand-in drafts 4 and keeps 2 every third step: our passes say so, and agree with its own counters
    assert all(3 in r.accept_lengths and 4 in r.draft_sizes for r in spec)
    assert all(r.drafted == r.drafter_state["draft_n"] and r.accepted == r.drafter_state["draft_n_accepted"] for r in spec)
    at2 = by[("engine:ngram", 2)]
    assert all(r.batch_wall_time_s and r.finished_s > r.admitted_s >= 0 for r in at2)
    assert sum(r.wall_time_s for r in at2) == pytest.approx(at2[0].batch_wall_time_s)
    counters = json.loads((run_dir / "engine" / "counters.json").read_text())[0]["counters"]
    assert counters["engine:ngram"]["drafts"] > 0 and counters["engine:off"]["drafts"] == 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["engine"]["version"].startswith("version: 0 (fake)")
    assert "--spec-type" in manifest["engine"]["settings"]["engine:ngram"]["argv"]
    report = (run_dir / "report.md").read_text()
    assert "## Engine under test: llama-server 0 (fake)" in report and "ours vs the engine's own" in report
    assert "## Concurrency levels 1, 2" in report and (run_dir / "concurrency_speedup.png").is_file()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [m["method"] for m in summary["engine"]["methods"]] == ["engine:off", "engine:ngram"]
    ngram = summary["engine"]["counters"]["engine:ngram"]
    assert ngram["accepted_per_position"] == [ngram["drafts"], ngram["drafts"]]  # (the stand-in keeps 2 of every 4)
    schema = json.loads((Path(__file__).resolve().parent.parent / "specbench" / "reports" / "summary.schema.json").read_text())
    assert validate(schema, summary) == []
    assert "Accepted by draft position, ours / the engine's /metrics" in report
    assert main(["check", str(run_dir)]) == 0
    assert "the engine's rows engine:off" in capsys.readouterr().out
    assert no_server_left(fake["pids"])
    # a rerun resumes: nothing left to time, the servers started and stopped again
    code, err, _ = run(fake, capsys, "--concurrency", "1,2")
    assert code == 0 and len(read_records(run_dir)) == len(recs)


@pytest.mark.parametrize("fault, where, opts, needle", [
    ("die-at-start", "engine:off", (), "llama-server engine:off exited with code 3 while starting: error: the fake cannot"),
    ("never-ready", "engine:ngram", ("--engine-opt", "ready_timeout_s=1"), "engine:ngram was not ready within 1 s"),
    ("die", "engine:ngram", (), "llama-server engine:ngram exited with code 9"),
    ("hang", "engine:ngram", ("--engine-opt", "request_timeout_s=1"), "engine:ngram gave no complete answer within 1 s"),
    ("wrong-props", "engine:ngram", (), "is not the server specbench asked for: model /elsewhere/other.gguf, asked"),
    ("garbage", "engine:ngram", (), "answered something that is not a JSON object: '<html>oops</html>'"),
    ("refuse", "engine:ngram", (), "refused the request: HTTP 500: the fake refuses"),
    ("bad-ids", "engine:ngram", (), "token id 1000000000 in an event, outside the vocabulary"),
])
def test_faults_are_one_line_keep_records_and_leave_no_server(fake, capsys, fault, where, opts, needle) -> None:
    code, err, run_dir = run(fake, capsys, "--method-opt", f"{where}.fault={fault}", *opts)
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("specbench run: error")]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err
    assert no_server_left(fake["pids"])
    if fault == "die":  # the second question's request died: the first question's rows are all there
        kept = [(r.method, r.question_id) for r in read_records(run_dir)]
        first = kept[0][1]
        assert {("ar", first), ("engine:off", first), ("engine:ngram", first)} <= set(kept)


def started(fake, tmp_path, *flag_lists: list[str]) -> list:
    """Stand-in servers started as an engine would be (one per list of flags), for runs against servers specbench
    did not start; the caller stops them."""
    from specbench.serving.llama_server import LlamaServer

    servers = [LlamaServer(f"s{i}", Path(os.environ["SPECBENCH_LLAMA_SERVER"]), fake["gguf"], flags,
                           tmp_path / "logs", threads=1, ctx=256, parallel=1, vocab=None)
               for i, flags in enumerate(flag_lists)]
    try:
        for s in servers:
            s.start()
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return servers


def test_an_impostor_on_every_port_picked_is_refused_with_no_engine_records(fake, capsys, tmp_path,
                                                                             monkeypatch) -> None:
    """Another server (speculating) bound the port first: specbench's own fails to bind, the stranger answers
    ``/health``; start-up must see that the listener is not its own process, on every try."""
    from specbench.serving import llama_server

    impostor = started(fake, tmp_path, ["--spec-type", "ngram-simple"])[0]
    try:
        monkeypatch.setattr(llama_server, "free_port", lambda: impostor.port)
        code, err, run_dir = run(fake, capsys, limit="1")
    finally:
        impostor.stop()
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("specbench run: error")]
    assert code == 2 and len(lines) == 1, err
    assert f"port {impostor.port} is answered by another process" in lines[0] and "3 ports tried" in lines[0]
    assert not [r for r in read_records(run_dir) if r.method.startswith("engine:")]
    assert no_server_left(fake["pids"])


@pytest.mark.parametrize("squatter", ["impostor", "bound-socket"])
def test_a_port_taken_before_the_server_bound_it_is_replaced_by_another(fake, capsys, tmp_path, monkeypatch,
                                                                       squatter) -> None:
    """Only the first port picked is taken (by a speculating server, or a socket that only holds the port): the
    server starts on another, and engine:off is measured on specbench's own server (it never drafts)."""
    import socket

    from specbench.serving import llama_server, process

    impostor, sock = None, None
    if squatter == "impostor":
        impostor = started(fake, tmp_path, ["--spec-type", "ngram-simple"])[0]
        taken = impostor.port
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        taken = sock.getsockname()[1]
    picks = iter([taken])
    monkeypatch.setattr(llama_server, "free_port", lambda: next(picks, None) or process.free_port())
    try:
        code, err, run_dir = run(fake, capsys, limit="1")
    finally:
        if impostor is not None:
            impostor.stop()
        if sock is not None:
            sock.close()
    assert code == 0, err
    off = [r for r in read_records(run_dir) if r.method == "engine:off"]
    assert off and all(r.drafted == 0 for r in off)
    ports = {s["port"] for s in json.loads((run_dir / "manifest.json").read_text())["engine"]["settings"].values()}
    assert taken not in ports
    assert no_server_left(fake["pids"])


def openai_run(fake, capsys, off, spec, *extra: str) -> tuple[int, str, Path]:
    argv = ["run", "--model", str(fake["model"]), "--tasks", "gsm8k", "--limit", "1", "--max-new-tokens", "12",
            "--warmup", "0", "--engine", f"openai:{off.url}/v1", "--methods", "engine:spec",
            "--method-opt", f"engine:spec.url={spec.url}", "--out-dir", str(fake["out"]), "--run-name", "oa",
            "--no-progress", *extra]
    code = main(argv)
    return code, capsys.readouterr().err, fake["out"] / "oa"


def test_openai_keep_alive_comments_forever_hit_the_request_deadline(fake, capsys, tmp_path) -> None:
    """A server that sends a keep-alive comment every 50 ms and never a token: the request's deadline (1 s here)
    ends it, not the silence between bytes (there is none); the rows before it are kept."""
    off, spec = started(fake, tmp_path, ["--spec-type", "none"], ["--spec-type", "none", "--fault", "keep-alive"])
    try:
        t0 = time.monotonic()
        code, err, run_dir = openai_run(fake, capsys, off, spec, "--engine-opt", "request_timeout_s=1")
        took = time.monotonic() - t0
    finally:
        off.stop(), spec.stop()
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("specbench run: error")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert f"engine engine:spec at {spec.url} gave no complete answer within 1 s (request_timeout_s)" in lines[0]
    assert took < 15  # (the stand-in's comments last 20 s: the deadline, not the end of its stream, stopped it;
    # the margin is wide because the whole run, AR and engine:off included, is inside it on a loaded 2-core CI)
    assert {r.method for r in read_records(run_dir)} == {"ar", "engine:off"}


def test_openai_event_line_over_the_cap_is_refused_with_rows_kept(fake, capsys, tmp_path, monkeypatch) -> None:
    from specbench.serving import http_client

    monkeypatch.setattr(http_client, "MAX_BODY", 1 << 20)
    off, spec = started(fake, tmp_path, ["--spec-type", "none"], ["--spec-type", "none", "--fault", "big-line"])
    try:
        code, err, run_dir = openai_run(fake, capsys, off, spec)
    finally:
        off.stop(), spec.stop()
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("specbench run: error")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert f"engine engine:spec at {spec.url} sent an event line longer than 1 MiB" in lines[0]
    assert {r.method for r in read_records(run_dir)} == {"ar", "engine:off"}


def test_an_event_line_over_the_cap_is_refused_without_holding_it(fake, tmp_path) -> None:
    """2 MiB in one line against a 1 MiB cap: refused after reading at most the cap and a piece, so the memory the
    read takes stays near the cap (a reader that waits for the line's end would hold all of it)."""
    import tracemalloc

    from specbench.serving.http_client import stream_events
    from specbench.serving.process import EngineError

    server = started(fake, tmp_path, ["--fault", "big-line"])[0]
    try:
        tracemalloc.start()
        with pytest.raises(EngineError, match="sent an event line longer than 1 MiB"):
            list(stream_events(server.url, "/completion", {"prompt": [1], "stream": True}, 10.0, max_line=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.stop()
    assert peak < 1.5 * (1 << 20), peak


def test_a_diverging_engine_row_is_a_mismatch_with_its_margin(fake, capsys) -> None:
    code, err, run_dir = run(fake, capsys, "--method-opt", "engine:ngram.fault=diverge", limit="1")
    assert code == 1 and "MISMATCH" in err
    spec = [r for r in read_records(run_dir) if r.method == "engine:ngram"]
    assert spec[0].lossless_class == "mismatch" and spec[0].first_divergence == 5
    assert spec[0].ar_margin == pytest.approx(0.6931472)  # log 0.6 - log 0.3, asked of engine:off untimed
    assert main(["check", str(run_dir)]) == 1
    assert no_server_left(fake["pids"])


def test_a_stream_that_leaves_a_token_out_is_asked_again(fake, capsys) -> None:
    code, err, run_dir = run(fake, capsys, "--method-opt", "engine:ngram.fault=gap", limit="1")
    assert code == 0, err
    spec = [r for r in read_records(run_dir) if r.method == "engine:ngram"][0]
    assert spec.drafter_state["refetched"] and spec.lossless_class == "exact" and sum(spec.accept_lengths) == 12


def test_interrupted_run_stops_its_servers_and_resumes(fake, capsys, monkeypatch) -> None:
    from specbench.results.run_folder import RecordWriter
    original, calls = RecordWriter.write, {"n": 0}

    def flaky(self, rec):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        original(self, rec)

    monkeypatch.setattr(RecordWriter, "write", flaky)
    code, err, run_dir = run(fake, capsys)
    assert code == 130 and "interrupted; records written so far are kept" in err and len(read_records(run_dir)) == 3
    assert no_server_left(fake["pids"])
    monkeypatch.setattr(RecordWriter, "write", original)
    code, err, run_dir = run(fake, capsys)
    keys = [r.key for r in read_records(run_dir)]
    assert code == 0 and len(keys) == len(set(keys)) == 6


def test_openai_adapter_against_servers_it_did_not_start(fake, capsys, tmp_path) -> None:
    from specbench.serving.llama_server import LlamaServer

    servers = [LlamaServer(label, Path(os.environ["SPECBENCH_LLAMA_SERVER"]), fake["gguf"], ["--spec-type", kind],
                           tmp_path / "logs", threads=1, ctx=256, parallel=1, vocab=None)
               for label, kind in (("off", "none"), ("spec", "ngram-simple"))]
    try:
        for s in servers:
            s.start()
        argv = ["run", "--model", str(fake["model"]), "--tasks", "gsm8k", "--limit", "1", "--max-new-tokens", "12",
                "--warmup", "0", "--engine", f"openai:{servers[0].url}/v1", "--methods", "engine:spec",
                "--method-opt", f"engine:spec.url={servers[1].url}", "--out-dir", str(fake["out"]), "--run-name", "oa",
                "--no-progress"]
        assert main(argv) == 0, capsys.readouterr().err
        recs = [r for r in read_records(fake["out"] / "oa") if r.method == "engine:spec"]
        assert recs[0].lossless_class == "exact" and 3 in recs[0].accept_lengths
        manifest = json.loads((fake["out"] / "oa" / "manifest.json").read_text())
        assert manifest["engine"]["settings"]["engine:spec"]["dialect"] == "llama.cpp"
    finally:
        for s in servers:
            s.stop()
    assert no_server_left(fake["pids"])


def test_a_killed_specbench_takes_its_server_with_it(fake, tmp_path) -> None:
    """``kill -9`` of specbench runs no Python code: the kernel's parent-death signal stops the server."""
    script = (f"import sys, time; sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n"
              "from pathlib import Path\nfrom specbench.serving.process import ServerProcess, free_port\n"
              f"p = ServerProcess('x', [{os.environ['SPECBENCH_LLAMA_SERVER']!r}, '--port', str(free_port())], "
              f"Path({str(tmp_path / 'log')!r}), lambda: True, 5)\np.start()\nprint(p.pid, flush=True)\ntime.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not fake["pids"].is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        child.stdout.readline()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        assert no_server_left(fake["pids"], wait=10)
    finally:
        child.kill()
