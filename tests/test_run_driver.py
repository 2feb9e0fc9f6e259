"""The runner's one driver (``specbench/run/driver.py``) and the one learn/replay of sequences and batched pools
(``specbench/run/drafter_state.py``), by hand: no model, no run folder.

- the timing idiom gives every generation of a job an equal share of its CPU seconds (one sequence: all of them);
- a job's records are written only where missing, each with its lossless verdict, and marked done;
- ``replay`` learns whole finished jobs at repeat 0 only, in plan order, and a late pool instance catches up;
- the modules' worked examples hold.
"""
from __future__ import annotations

import doctest
import time
from dataclasses import dataclass
from types import SimpleNamespace

import torch

import specbench.run.drafter_state as drafter_state
import specbench.run.driver as driver
from specbench.results.record import Unit
from specbench.run.context import Row
from specbench.run.drafter_state import DrafterPools, RepeatIsolation, replay
from specbench.run.driver import SequenceJob, timed_generations, write_missing


def test_the_worked_examples_hold() -> None:
    for mod in (driver, drafter_state):
        result = doctest.testmod(mod)
        assert result.failed == 0 and result.attempted >= 2, mod.__name__


def _busy(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_job_shares_its_cpu_seconds_and_one_sequence_gets_them_all() -> None:
    gens = [SimpleNamespace(cpu_time_s=None) for _ in range(3)]
    out, t = timed_generations(torch.device("cpu"), lambda: _busy(0.05) or gens)
    assert out is gens and t.cpu_s >= 0.05 and t.wall_s >= t.cpu_s * 0.5
    assert all(g.cpu_time_s == t.cpu_s / 3 for g in gens)
    kind, peak = t.memory
    assert isinstance(kind, str) and peak > 0
    (one,), t1 = timed_generations(torch.device("cpu"), lambda: _busy(0.02) or [SimpleNamespace(cpu_time_s=None)])
    assert one.cpu_time_s == t1.cpu_s


def test_only_missing_records_are_written_checked_and_marked_done() -> None:
    units = [Unit("gsm8k", q, 1, 0, batch=2) for q in "123"]
    rows = [Row("pld", u, None, [i]) for i, u in enumerate(units)]
    done = {("pld", units[1])}
    written: list = []
    ctx = SimpleNamespace(checked=lambda rec, unit, prompt: (rec, unit, prompt))
    n = write_missing(ctx, rows, lambda i: f"rec{i}", done, SimpleNamespace(write=written.append))
    assert n == 2 and written == [("rec0", units[0], [0]), ("rec2", units[2], [2])]
    assert done == {("pld", u) for u in units}


class Learner:
    keeps_state_across_generations = True

    def __init__(self) -> None:
        self.outputs: list[list[int]] = []

    def learn(self, prompt: list[int], output: list[int]) -> None:
        self.outputs.append(output)


@dataclass(frozen=True)
class PairJob:
    """A batched job's shape: two units decoded together in the pool ("m", task, 2)."""

    method: str
    units: tuple
    questions: tuple

    @property
    def slot(self) -> tuple:
        return (self.method, self.units[0].task, 2)

    @property
    def width(self) -> int:
        return 2


def test_replay_learns_whole_finished_jobs_at_repeat_0_in_plan_order() -> None:
    q = SimpleNamespace()
    u = [Unit("t", str(i), 1, 0, batch=2) for i in range(4)]
    jobs = [PairJob("m", (u[0], u[1]), (q, q)), PairJob("m", (u[2], u[3]), (q, q)),
            PairJob("m", tuple(Unit("t", x.question_id, 1, 1, batch=2) for x in u[:2]), (q, q))]
    records = {("m", x): SimpleNamespace(output_ids=[int(x.question_id), x.repeat]) for x in u[:3]}
    records.update({("m", Unit("t", x.question_id, 1, 1, batch=2)): SimpleNamespace(output_ids=[9]) for x in u[:2]})
    pools = DrafterPools(lambda method, task: Learner())
    pools.open(("m", "t", 2))
    replay(jobs, records, lambda unit, q: [unit.batch], RepeatIsolation(2), pools, {})
    first, second = pools.grown(("m", "t", 2), 2)
    # job 1 whole at repeat 0; job 2 lacks u[3] (redone whole, learned when it runs); job 3 is repeat 1
    assert first.outputs == second.outputs == [[0, 0], [1, 0]]


def test_a_sequence_is_a_pool_of_one_in_its_method_and_task() -> None:
    d = Learner()
    pools = DrafterPools(lambda method, task: None)
    job = SequenceJob("suffix", Unit("t", "1", 2), None)
    pools.open(job.slot, [d])
    budget = object()
    assert pools.parts(job, {("suffix", "t"): budget}) == [d, budget]
    pools.learn(job.slot, [1], [5])
    assert d.outputs == [[5]]
