"""Property ``exact-batched``: at batch size 2 (``BatchDecoder``, one drafter instance per slot, as the runner
gives them, handed to the slot's next sequence after its ``begin``) the output is AR's.

A drafter whose ``begin`` forgets to reset a per-sequence state, or whose instances share one (a class-level
list), drafts from the other sequence's text; the engine still verifies, so such a fault shows here only as a
crash, or as an output that differs when the drafter also writes where it must not.
"""
from __future__ import annotations

from specbench.conformance.exact import divergence, never_drafted
from specbench.conformance.outcome import Outcome, failed, passed
from specbench.conformance.watch import Log
from specbench.conformance.world import Subject
from specbench.engine.batch_loop import BatchDecoder, Request

NAME = "exact-batched"
WIDTH = 2


def check(subject: Subject) -> Outcome:
    drafted = outputs = 0
    for family in subject.families:
        world, log = subject.world(family), Log()
        drafters = [subject.watched(family, log) for _ in range(WIDTH)]
        if drafters[0] is None:
            continue
        decoder = BatchDecoder(world.engine, subject.limits.max_new)
        gens = decoder.generate([Request(p) for p in world.prompts], drafters, WIDTH, refill=True)
        for i, (gen, want) in enumerate(zip(gens, world.ar)):
            if gen.output_ids != want:
                return failed(NAME, divergence(f"{family} prompt {i} at width {WIDTH}", want, gen.output_ids))
        drafted += log.drafted()
        outputs += len(gens)
    if not drafted:
        return never_drafted(NAME, f"batched at width {WIDTH}")
    return passed(NAME, f"{outputs} generations at width {WIDTH} (slots refilled) on {', '.join(subject.families)} "
                        f"equal AR's; {drafted} draft tokens proposed")
