"""Stalls at every batch size (issue 85, defect 1), on constructed records: the step test on a batched sequence's
steps, and the CPU test against its run's own rate rather than half a core. No false alarm: a batched record with
a long prefill, a batch whose steps shrink, a GPU-like run at one core of sixteen, a run whose waits sleep, methods
that keep different rates. The stall watch refuses a batched stall under ``--require-quiet``. And the premise of
the step test in a batch, on a tiny model: a refilled slot's prefill lands in no other sequence's steps.
``test_stall_sigstop.py`` stops a real batch with SIGSTOP."""
from __future__ import annotations

import random
import time
from types import SimpleNamespace

import pytest

from conftest import make_tiny_model
from specbench.engine.batch_loop import BatchDecoder, Request
from specbench.engine.loop import Engine
from specbench.errors import UserError
from specbench.results.stalls import STEP_S, stall_reason, stalled, step_stall
from specbench.run.stall_watch import StallWatch

QUIET_STEPS = [0.05, 0.06, 0.05, 0.07, 0.05, 0.06, 0.05]


def rec(method: str = "pld", cpu: float | None = 1.0, wall: float = 1.0, size: int | None = None,
        batch_wall: float | None = None, steps: list[float] | None = None, q: int = 0) -> SimpleNamespace:
    """A record as the stall tests read it (``size``: its batch size, None alone; ``batch_wall``: its batch's)."""
    return SimpleNamespace(method=method, unit=f"gsm8k/{q} turn 1 repeat 0" + (f" batch {size}" if size else ""),
                           subtask="GSM8K", cpu_time_s=cpu, wall_time_s=wall, batch_size=size,
                           batch_wall_time_s=batch_wall, step_times_s=[0.2] + QUIET_STEPS if steps is None else steps)


def batch(method: str, cpu: float, wall: float, size: int = 2, steps: list[float] | None = None,
          q: int = 0) -> list[SimpleNamespace]:
    """The ``size`` records of one batch that took ``wall`` seconds and ``cpu`` CPU seconds (equal shares)."""
    return [rec(method, cpu / size, wall / size, size, wall, steps, q + i) for i in range(size)]


def test_a_stopped_batch_is_flagged_by_its_steps():
    """Before: the step test skipped every batch size above one."""
    stopped = rec(size=2, batch_wall=16.0, steps=[0.3] + QUIET_STEPS[:3] + [15.05] + QUIET_STEPS[3:])
    assert step_stall(stopped) == "one decode step took 15.05 s against a median of 0.055 s"
    assert [s.unit for s in stalled([stopped])] == [stopped.unit]


def test_a_quiet_batch_is_not_flagged_by_its_steps():
    """A long prompt's prefill (its own first entry), a batch that shrinks to a third of its forward, and
    steps a few times their median are not stops."""
    long_prompt = rec(size=4, batch_wall=12.0, steps=[8.0] + QUIET_STEPS)
    shrinking = rec(size=4, batch_wall=3.0, steps=[0.3] + [0.15] * 6 + [0.05] * 6)
    drafting = rec(size=2, batch_wall=3.0, steps=[0.3] + [0.05, 0.4, 0.05, 0.3, 0.05, 0.05])
    assert [step_stall(r) for r in (long_prompt, shrinking, drafting)] == [None] * 3


def test_the_issues_batch_is_flagged_by_its_cpu_rate():
    """The issue's figures: a 15 s stop in ``pld``'s batch of two, 8.65 CPU s in 16.25 wall s per record, in a run
    keeping about a core. Before: above half a core, not flagged."""
    run = [rec("ar", 2.1, 2.2, q=1), rec("ar", 2.0, 2.1, q=2), rec("pld", 1.5, 1.6, q=1), rec("pld", 1.6, 1.7, q=2),
           *batch("ar", 3.5, 3.6), *batch("pld", 17.3, 32.5, steps=[0.3] + QUIET_STEPS)]
    found = stalled(run)
    assert [s.unit for s in found] == [r.unit for r in run[-2:]], found
    assert all("8.65 CPU s in 16.25 wall s (its share of the batch's): 0.53 cores against its run's" in s.reason
               and "s not running" in s.reason for s in found)


def test_a_slowed_many_thread_run_is_flagged_by_its_cpu_rate():
    """Eight cores kept while running: a record that kept three over 10 s (a stop between its steps) is far above
    half a core and far below its peers."""
    quiet = [rec("ar", 7.8 * w, w, q=i) for i, w in enumerate((2.0, 3.0, 2.5, 4.0))]
    stopped = rec("ar", 30.0, 10.0, q=9)
    found = stalled([*quiet, stopped])
    assert [s.unit for s in found] == [stopped.unit] and stall_reason(stopped) is None  # (half a core alone: no)
    assert found[0].reason == ("its process ran 30.00 CPU s in 10.00 wall s: 3.00 cores against its run's 7.80 "
                               "(6.15 s not running)")


def test_no_false_alarm_where_a_run_keeps_few_cores_or_methods_differ():
    """A GPU-like run at 16 threads keeping one core (one thread waiting on the device) everywhere; a run whose
    waits sleep (0.6 of a core everywhere); methods that keep 1.9 and 1.0 cores (a tiny model, 2 threads, drafting
    on one); quiet batches of each. ``threads x wall`` would flag all of them."""
    gpu = [rec(m, c * w, w, q=i) for i, (m, c, w) in enumerate([("ar", 1.0, 5.0), ("ar", 0.97, 6.0),
                                                                 ("pld", 0.9, 4.0), ("pld", 1.02, 7.0)])]
    gpu += batch("ar", 0.95 * 9.0, 9.0, size=4) + batch("pld", 0.9 * 8.0, 8.0, size=4)
    sleepy = [rec(m, 0.6 * w, w, q=i) for i, (m, w) in enumerate([("ar", 5.0), ("ar", 6.0), ("pld", 4.0)])]
    sleepy += batch("pld", 0.62 * 10.0, 10.0)
    mixed = [rec("ar", 1.9 * w, w, q=i) for i, w in enumerate((4.0, 5.0, 6.0))]
    mixed += [rec("pld", 1.0 * w, w, q=i) for i, w in enumerate((3.0, 5.0, 2.0))] + batch("pld", 1.3 * 12, 12.0)
    for run in (gpu, sleepy, mixed):
        assert stalled(run) == [], run


def test_the_stall_watch_refuses_a_stalled_batch_and_judges_against_the_run_so_far(capsys):
    """The watch judges each record as it is written against the records before it (and a resumed run's)."""
    written = []
    earlier = [rec("pld", 1.0 * w, w, q=i) for i, w in enumerate((2.0, 3.0))]
    stopped = batch("pld", 17.3, 32.5)
    with pytest.raises(UserError, match=r"pld gsm8k/0 turn 1 repeat 0 batch 2 stalled: .*0\.53 cores against"):
        StallWatch(SimpleNamespace(write=written.append), refuse=True, seen=earlier).write(stopped[0])
    assert written == []
    watch = StallWatch(SimpleNamespace(write=written.append), refuse=False, seen=earlier)
    for r in stopped:
        watch.write(r)
    assert written == stopped and capsys.readouterr().err.count("batch 2 stalled: ") == 2
    alone = StallWatch(SimpleNamespace(write=written.append), refuse=False)  # (no run yet: half a core alone)
    alone.write(stopped[0])
    assert capsys.readouterr().err == ""


def test_the_stall_watch_flags_nothing_in_a_quiet_run(capsys):
    """A quiet run written through the watch, two methods at a core or so, each record dropped once written (a
    record alone is its own job by its key, method and unit, not by the object)."""
    watch = StallWatch(SimpleNamespace(write=lambda r: None), refuse=True)
    for i in range(60):
        method = ("ar", "pld")[i % 2]
        watch.write(rec(method, (1.0 + 0.01 * (i % 7)) * 3.0, 3.0, q=i))  # (each record dropped once written)
    assert capsys.readouterr().err == ""


def _refill_case(model) -> tuple[Engine, list[list[int]]]:
    """Three prompts and a stop token on which request 0 stops at its second token while request 1 runs on past
    the refill of request 0's slot with request 2."""
    plain = Engine(model, stop_ids=set())
    for seed in range(200):
        rng = random.Random(seed)
        prompts = [[rng.randrange(4, 64) for _ in range(rng.randint(3, 12))] for _ in range(3)]
        outs = [plain.generate(p, None, 10).output_ids for p in prompts]
        stop = outs[0][1]
        if stop not in outs[0][:1] and stop not in outs[1] and stop not in outs[2][:4]:
            return Engine(model, stop_ids={stop}), prompts
    raise AssertionError("no prompts found")


def test_a_refilled_slots_prefill_lands_in_no_other_sequences_steps(monkeypatch):
    """The step test's premise in a batch (``engine/batch_loop.py``): a refill's admission runs between steps.
    Here it takes ``STEP_S`` and more (as a long prompt's prefill would); the sequence beside it waits that long
    between two steps, and none of its steps holds it."""
    engine, prompts = _refill_case(make_tiny_model("llama", seed=3))
    slow = STEP_S + 0.2
    admit = BatchDecoder._admit

    def _admit(self, requests, index, slots, cache, gens, slot=None):
        admit(self, requests, index, slots, cache, gens, slot)
        if slot is not None:  # a refill
            time.sleep(slow)

    monkeypatch.setattr(BatchDecoder, "_admit", _admit)
    gens = BatchDecoder(engine, 10).generate([Request(p) for p in prompts], None, 2, refill=True)
    first, beside, refilled = gens
    assert len(first.output_ids) == 2 and refilled.admitted_s > 0 and beside.finished_s > refilled.admitted_s + slow
    assert beside.finished_s - beside.admitted_s > sum(beside.step_times_s) + slow * 0.9  # it waited, between steps
    assert max(beside.step_times_s[1:]) < slow
    assert [step_stall(rec(size=2, batch_wall=3.0, steps=g.step_times_s)) for g in gens] == [None] * 3
