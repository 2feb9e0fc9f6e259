"""Property ``resume``: a resumed run drafts as an uninterrupted one. The runner resumes a drafter's state by
replaying ``learn`` with the finished records' outputs in plan order (``run/drafter_state.py``, ``replay``):
whatever else a drafter kept from inside earlier generations is lost at a resume.

Checked on the first family: one drafter runs every prompt in order, learning each output (the uninterrupted
run); a fresh drafter learns the outputs of all prompts but the last, without generating (the resumed run), then
both run the last prompt: their proposals must be the same. Example of a failure: a drafter whose table is filled
in ``observe`` (the target's verified rows) rather than in ``learn`` starts empty after a resume.
"""
from __future__ import annotations

from specbench.conformance.outcome import Outcome, failed, passed
from specbench.conformance.repeats import first_difference, undeclared
from specbench.conformance.watch import Log
from specbench.conformance.world import Subject
from specbench.run.drafter_state import learn

NAME = "resume"


def check(subject: Subject) -> Outcome:
    family = subject.families[0]
    world = subject.world(family)
    whole_log, resumed_log = Log(), Log()
    whole, resumed = subject.watched(family, whole_log), subject.watched(family, resumed_log)
    if whole is None:
        return passed(NAME, "no drafter: nothing to resume")
    *before, last = list(zip(world.prompts, range(len(world.prompts))))
    for prompt, _ in before:
        out = world.engine.generate(prompt, whole, subject.limits.max_new).output_ids
        learn(whole, prompt, out)
        learn(resumed, prompt, out)  # (the replay: the record's output, no generation)
    logs = []
    for drafter, log in ((whole, whole_log), (resumed, resumed_log)):
        start = len(log.proposals)
        world.engine.generate(last[0], drafter, subject.limits.max_new)
        logs.append(log.proposals[start:])
    if logs[0] != logs[1]:
        where = (f"on prompt {last[1]}, after {len(before)} learned, a resumed drafter proposed differently from "
                 f"step {first_difference(*logs)}: state kept from inside generations is not replayed by learn()")
        return failed(NAME, where if whole.keeps_state_across_generations else undeclared(where))
    return passed(NAME, f"after {len(before)} prompts replayed through learn(), the last prompt's "
                        f"{len(logs[0])} proposals equal an uninterrupted run's")
