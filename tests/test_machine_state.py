"""A busy machine is said: the machine-state verdicts, the sampler, the manifest's sessions, the warnings,
the report header line, ``--require-quiet`` and the OpenMP wait-policy default.

Every test reads a scripted probe (``FakeProbe``: other processes' share and the load are what the test
says, its clock's sleeps are virtual), never the real machine's load.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
import torch

import specbench.profiling.wait_policy as wait_policy
from specbench.cli import main
from specbench.profiling import machine_probe
from specbench.profiling.machine_probe import CpuReading, busy_seconds
from specbench.profiling.machine_sampler import LoadSampler
from specbench.profiling.machine_state import OTHER_CORES_LIMIT, is_busy, load_says_busy, machine_note
from specbench.reports.report import write_report
from specbench.results.run_folder import read_manifest
from specbench.profiling.machine_state import sessions
from specbench.run.machine_session import MachineSession, require_quiet
from test_compare_merge import _split_into_shards
from test_stats import write_fake_run


class FakeProbe:
    """Other processes keep ``other`` cores busy, the 1-minute load reads ``load``; ``sleep`` is virtual."""

    def __init__(self, other: float = 0.0, load: float = 0.1, cpus: int = 2) -> None:
        self.other, self.load, self.n = other, load, cpus
        self.slept = 0.0

    def reading(self) -> CpuReading:
        t = time.monotonic() + self.slept
        return CpuReading(t, self.other * t, 0.0)

    def load_avg(self) -> float | None:
        return self.load

    def cpus(self) -> int:
        return self.n

    def online_cpus(self) -> int:
        return self.n

    def governor(self) -> str | None:
        return None

    def sleep(self, seconds: float) -> None:
        self.slept += seconds


def use_probe(monkeypatch: pytest.MonkeyPatch, probe: FakeProbe) -> FakeProbe:
    monkeypatch.setattr(machine_probe, "default_probe", lambda: probe)
    # the run's threads default to torch's count, which an earlier test's --threads 1 may have left at 1 in this
    # process (one spare core of two would hide the scripted contention): the probe's cores are the run's threads
    monkeypatch.setattr(torch, "get_num_threads", lambda: probe.n)
    return probe


BUSY = {"cpus": 2, "threads": 2, "before": {"load_avg_1min": 1.9, "other_cpu_cores": 0.95},
        "during": {"other_cpu_cores": 0.9, "load_avg_mean": 3.1, "samples": 4}, "completed": True}
QUIET = {"cpus": 2, "threads": 2, "before": {"load_avg_1min": 0.1, "other_cpu_cores": None},
         "during": {"other_cpu_cores": 0.02, "load_avg_mean": 2.0, "samples": 4}, "completed": True}


# -- verdicts ---------------------------------------------------------------------------------------------

def test_contention_counts_only_cores_the_run_does_not_leave_spare() -> None:
    assert is_busy(0.9, cpus=2, threads=2) and is_busy(OTHER_CORES_LIMIT + 0.01, cpus=2, threads=None)
    assert not is_busy(OTHER_CORES_LIMIT, cpus=2, threads=2) and not is_busy(0.05, cpus=2, threads=2)
    assert not is_busy(0.9, cpus=2, threads=1)  # one thread on two cores: the other job has a core of its own
    assert not is_busy(None, cpus=2, threads=2)  # unknown (no /proc) is no verdict
    # the load before a run: judged against the whole machine's spare cores, only a hint to measure
    assert load_says_busy(1.0, 2, 2) and not load_says_busy(0.4, 2, 2) and not load_says_busy(1.0, 16, 4)
    assert not load_says_busy(None, 2, 2)


def test_busy_seconds_sum_only_the_cores_this_process_may_use() -> None:
    stat = ("cpu  1 1 1 1 1 1 1 1\n"
            "cpu0 100 0 100 900 50 0 0 0 0 0\n"   # 200 busy ticks (iowait is idle)
            "cpu1 10 0 10 900 0 0 0 30 0 0\n"     # 50 busy ticks, steal included
            "cpu2 999 0 0 0 0 0 0 0 0 0\n")
    assert busy_seconds([0, 1], stat, 100) == pytest.approx(2.5)
    assert busy_seconds([2], stat, 100) == pytest.approx(9.99)
    assert busy_seconds([3], stat, 100) is None


def test_the_system_probe_degrades_to_nulls_without_proc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(machine_probe, "PROC_STAT", tmp_path / "no_stat")
    monkeypatch.setattr(machine_probe, "GOVERNOR_FILES", str(tmp_path / "cpu*" / "scaling_governor"))
    monkeypatch.delattr(os, "getloadavg")
    probe = machine_probe.SystemProbe()
    assert probe.reading().busy_s is None and probe.load_avg() is None and probe.governor() is None
    assert probe.cpus() >= 1


# -- the sampler ------------------------------------------------------------------------------------------

def test_sampler_samples_on_a_daemon_thread_and_stops() -> None:
    sampler = LoadSampler(FakeProbe(other=1.0, load=2.5), interval=0.01).start()
    assert sampler.running and sampler._thread.daemon
    deadline = time.monotonic() + 5
    while not sampler._loads and time.monotonic() < deadline:
        time.sleep(0.01)
    figures = sampler.stop()
    assert not sampler.running
    assert figures["samples"] >= 1 and figures["load_avg_mean"] == 2.5 and figures["load_avg_max"] == 2.5
    assert figures["other_cpu_cores"] == pytest.approx(1.0) and figures["other_cpu_cores_peak"] == pytest.approx(1.0)
    assert not [t for t in threading.enumerate() if t.name == "specbench-machine-sampler"]


# -- sessions in the manifest ------------------------------------------------------------------------------

def run_session(run_dir: Path, fail: type[BaseException] | None = None) -> None:
    """One invocation as the runner makes it: the session wraps the run and joins the manifest it writes."""
    run_dir.mkdir(exist_ok=True)
    path = run_dir / "manifest.json"
    with MachineSession(run_dir, threads=2, interval=0.01) as session:
        manifest = json.loads(path.read_text()) if path.is_file() else {"run_name": run_dir.name, "config": {"methods": ["ar"]}}
        session.add_to(manifest)
        path.write_text(json.dumps(manifest))
        if fail:
            raise fail()


def test_each_invocation_adds_a_session_with_its_figures(monkeypatch, tmp_path, capsys) -> None:
    use_probe(monkeypatch, FakeProbe(other=0.0, load=0.2))
    run_dir = tmp_path / "run"
    run_session(run_dir)
    with pytest.raises(KeyboardInterrupt):  # an interrupted resume: its figures are written all the same
        run_session(run_dir, KeyboardInterrupt)
    assert not [t for t in threading.enumerate() if t.name == "specbench-machine-sampler"]
    first, second = sessions(read_manifest(run_dir))
    assert first["completed"] is True and second["completed"] is False
    for s in (first, second):
        assert s["cpus"] == 2 and s["threads"] == 2 and s["omp_wait_policy"] == os.environ.get("OMP_WAIT_POLICY")
        assert s["before"] == {"load_avg_1min": 0.2, "other_cpu_cores": None}  # a low load measures nothing more
        assert s["during"]["other_cpu_cores"] == pytest.approx(0.0) and s["after"] == {"load_avg_1min": 0.2}
    assert "warning: the machine" not in capsys.readouterr().err


def test_a_busy_machine_is_a_warning_as_the_run_starts_and_as_it_ends(monkeypatch, tmp_path, capsys) -> None:
    probe = use_probe(monkeypatch, FakeProbe(other=0.9, load=3.1))
    run_session(tmp_path / "run")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("warning: ") and "inflated" in line for line in err)
    assert "the machine is busy: other processes used 0.9 of 2 cores at the start (load 3.1)" in err[0]
    assert "not idle during this run: other processes used 0.9 of 2 cores on average" in err[1]
    assert probe.slept > 0  # the busy load was confirmed by a measurement
    (s,) = sessions(read_manifest(tmp_path / "run"))
    assert s["before"]["other_cpu_cores"] == pytest.approx(0.9)


def test_a_session_outside_a_manifest_writes_nothing(monkeypatch, tmp_path) -> None:
    use_probe(monkeypatch, FakeProbe())
    with pytest.raises(RuntimeError):
        with MachineSession(tmp_path, threads=1, interval=0.01):  # a run that fails before its manifest
            raise RuntimeError("no model")
    assert list(tmp_path.iterdir()) == []


# -- the report header and merged shards -------------------------------------------------------------------

def test_report_header_says_when_the_run_was_not_alone(tmp_path: Path) -> None:
    run = write_fake_run(tmp_path / "old", {"pld": 1.5})  # a manifest from before machine state: reports as ever
    assert "Machine not idle" not in write_report(run)
    for name, recorded, said in (("quiet", [QUIET], False), ("busy", [BUSY], True), ("resumed", [QUIET, BUSY], True)):
        run = write_fake_run(tmp_path / name, {"pld": 1.5})
        manifest = json.loads((run / "manifest.json").read_text())
        (run / "manifest.json").write_text(json.dumps(manifest | {"machine_state": {"sessions": recorded}}))
        text = write_report(run)
        assert ("**Machine not idle:** other processes used 0.9 of 2 cores on average (load 3.1)" in text) == said
        assert ("session 2 of 2" in text) == (name == "resumed")
    assert machine_note({"machine_state": {"sessions": "junk"}}) is None


def test_merged_shards_keep_every_shards_sessions(tmp_path: Path) -> None:
    shards = _split_into_shards(write_fake_run(tmp_path / "full", {"pld": 1.5}, n_questions=4), tmp_path / "s", 2)
    for shard, session in zip(shards, (QUIET, BUSY)):
        manifest = json.loads((shard / "manifest.json").read_text())
        (shard / "manifest.json").write_text(json.dumps(manifest | {"machine_state": {"sessions": [session]}}))
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    assert sessions(read_manifest(tmp_path / "merged")) == [QUIET, BUSY]
    assert "Machine not idle" in write_report(tmp_path / "merged")


# -- --require-quiet -------------------------------------------------------------------------------------

def test_require_quiet_refuses_a_busy_machine_in_one_line(monkeypatch, tmp_path, capsys) -> None:
    probe = use_probe(monkeypatch, FakeProbe(other=0.9, load=3.1))
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "a", "turns": ["Hi."]}) + "\n")
    code = main(["run", "--methods", "ar", "--tasks", f"jsonl:{questions}", "--out-dir", str(tmp_path / "runs"),
                 "--require-quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.splitlines() == [err] and "Traceback" not in err
    assert "busy: other processes used 0.9 of 2 cores over the last 1.5 s (load 3.1); --require-quiet refuses" in err
    assert probe.slept == pytest.approx(1.5) and not (tmp_path / "runs").exists()


def test_require_quiet_passes_a_quiet_machine(monkeypatch) -> None:
    use_probe(monkeypatch, FakeProbe(other=0.05, load=2.0))  # a high load, but nothing else runs now
    require_quiet(threads=2)
    use_probe(monkeypatch, FakeProbe(other=0.9))
    require_quiet(threads=1)  # one thread on two cores: the other job does not contend


# -- a real (tiny) run ------------------------------------------------------------------------------------

def test_a_run_records_its_sessions_and_warns_when_busy(monkeypatch, tmp_path, capsys) -> None:
    from tiny_model_dir import save_tiny_model

    monkeypatch.setenv("SPECBENCH_CACHE", str(tmp_path / "cache"))
    model = save_tiny_model(tmp_path / "model")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "a", "turns": ["Count to three."]}) + "\n")
    argv = ["run", "--methods", "ar,pld", "--tasks", f"jsonl:{questions}", "--model", str(model), "--device", "cpu",
            "--max-new-tokens", "4", "--out-dir", str(tmp_path / "runs"), "--run-name", "r", "--no-progress"]
    use_probe(monkeypatch, FakeProbe(other=0.0))
    assert main(argv + ["--require-quiet"]) == 0  # quiet: the flag lets it run, and names the same run folder
    run = tmp_path / "runs" / "r"
    assert "warning: the machine" not in capsys.readouterr().err
    assert "Machine not idle" not in (run / "report.md").read_text()
    use_probe(monkeypatch, FakeProbe(other=1.0, load=2.5))
    assert main(argv) == 0  # a resume (nothing left to run) on a busy machine
    assert sum(line.startswith("warning: ") for line in capsys.readouterr().err.splitlines()) == 2
    first, second = sessions(read_manifest(run))
    assert first["completed"] and second["completed"] and first["during"]["seconds"] >= 0
    import torch

    assert first["threads"] == torch.get_num_threads()
    assert "**Machine not idle:**" in (run / "report.md").read_text()


# -- the OpenMP wait policy -----------------------------------------------------------------------------

def test_the_cli_applies_the_default_wait_policy_unless_the_user_set_one(monkeypatch, capsys) -> None:
    monkeypatch.setattr(wait_policy, "DEFAULT_OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert os.environ.get("OMP_WAIT_POLICY") == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    monkeypatch.setattr(wait_policy, "DEFAULT_OMP_WAIT_POLICY", None)
    monkeypatch.delenv("OMP_WAIT_POLICY")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "OMP_WAIT_POLICY" not in os.environ  # None: the runtime's own default, unchanged
