"""Property ``repeats``: with ``--repeats 2`` each prompt's repeat 1 drafts what its repeat 0 drafted, following
the runner's protocol (``run/drafter_state.py``): repeat 0 on the live drafter, which then ``learn``s its output;
repeat 1 on a ``copy.deepcopy`` of the state before repeat 0 (``RepeatIsolation``), made only for a drafter that
declares ``keeps_state_across_generations``.

Two ways to fail: a drafter that declares the flag but whose deep copy still shares state with the live one (repeat
1 drafts from repeat 0's answer), and a drafter that keeps state across generations (``learn``, or anything kept
from one ``begin`` to the next) without declaring it: nothing is copied, and repeat 1 drafts from what repeat 0
left. Example: ``FAIL repeats: keeps state across generations but does not declare keeps_state_across_generations
(prompt 0 drafted differently at its repeat 1, from step 3)``.
"""
from __future__ import annotations

from specbench.conformance.outcome import Outcome, failed, passed
from specbench.conformance.watch import Drawn, Log
from specbench.conformance.world import Subject
from specbench.results.record import Unit
from specbench.run.drafter_state import RepeatIsolation, learn

NAME = "repeats"
SLOT = ("check-method", "synthetic")


def first_difference(a: list[Drawn], b: list[Drawn]) -> int:
    """The first step whose proposals differ (the shorter list's length when one is a prefix of the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def undeclared(where: str) -> str:
    return f"keeps state across generations but does not declare keeps_state_across_generations ({where})"


def check(subject: Subject) -> Outcome:
    family = subject.families[0]
    world, log = subject.world(family), Log()
    live = subject.watched(family, log)
    if live is None:
        return passed(NAME, "no drafter: nothing carried between repeats")
    declared = bool(live.keeps_state_across_generations)
    isolation = RepeatIsolation(2)
    for i, prompt in enumerate(world.prompts):
        drafts = []
        for repeat in (0, 1):
            try:
                drafter, = isolation.parts_for(SLOT, [Unit("check", f"q{i}", 1, repeat)], [live])
            except Exception as e:  # noqa: BLE001 (the copy is the drafter's own code: its failure is the finding)
                return failed(NAME, f"declares keeps_state_across_generations, but copy.deepcopy of it raised "
                                    f"{type(e).__name__}: {e}")
            start = len(log.proposals)
            gen = world.engine.generate(prompt, drafter, subject.limits.max_new)
            drafts.append(log.proposals[start:])
            if repeat == 0:
                learn(live, prompt, gen.output_ids)
        if drafts[0] != drafts[1]:
            where = f"prompt {i} drafted differently at its repeat 1, from step {first_difference(*drafts)}"
            if not declared:
                return failed(NAME, undeclared(where))
            return failed(NAME, f"{where}, although it ran on a deep copy of the state before repeat 0: the copy "
                                "shares state with the live drafter (define __deepcopy__)")
    how = "on deep copies of the state before repeat 0" if declared else "declares no state across generations"
    return passed(NAME, f"each of {len(world.prompts)} prompts drafted the same at repeats 0 and 1 ({how}; "
                        f"{log.drafted()} draft tokens)")
