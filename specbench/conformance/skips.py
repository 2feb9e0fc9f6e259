"""Property ``exact-skips``: under ``budget=auto`` the output is AR's whatever steps it skips, however deep it asks
the drafter to go and whatever part of a draft it keeps (``skip_pattern.SkipPattern``: seeded choices), alone and
at batch size 2.

A skipped step calls neither ``propose`` nor (unless ``observes_plain_steps``) ``observe``; the rows it verified
reach the drafter at its next ``propose`` (``ctx.hidden_states``), and a dropped draft is followed by an
``observe`` with nothing accepted. A drafter that assumes it saw every step (a draft model's cache one token
behind, a stale pointer into ``ctx.tokens``) crashes or proposes from a stale state here.
"""
from __future__ import annotations

from specbench.conformance.exact import divergence, never_drafted
from specbench.conformance.outcome import Outcome, failed, passed
from specbench.conformance.skip_pattern import RUN, SkipPattern
from specbench.conformance.watch import Log
from specbench.conformance.world import Subject
from specbench.engine.batch_loop import BatchDecoder, Request

NAME = "exact-skips"


def check(subject: Subject) -> Outcome:
    drafted = skipped = dropped = 0
    longest = 0
    for n, family in enumerate(subject.families):
        world, log = subject.world(family), Log()  # (one log per family: copies and slots share it)
        alone, batched = SkipPattern(seed=2 * n), SkipPattern(seed=2 * n + 1)
        drafters = [subject.watched(family, log) for _ in range(2)]
        if drafters[0] is None:
            return never_drafted(NAME, "under forced skip patterns")
        gens = [world.engine.generate(p, drafters[0], len(want), budget=alone)
                for p, want in zip(world.prompts, world.ar)]
        decoder = BatchDecoder(world.engine, subject.limits.max_new, budget=batched)
        gens += decoder.generate([Request(p) for p in world.prompts], drafters, 2, refill=True)
        for i, (gen, want) in enumerate(zip(gens, world.ar + world.ar)):
            where = f"{family} prompt {i % len(world.ar)}{' at width 2' if i >= len(world.ar) else ''} under skips"
            if gen.output_ids != want:
                return failed(NAME, divergence(where, want, gen.output_ids))
            drafted += gen.drafted_steps or 0
            skipped += gen.skipped_steps or 0
        dropped += alone.dropped + batched.dropped
        longest = max(longest, alone.resumed_after(), batched.resumed_after())
    if not drafted:
        return never_drafted(NAME, "under forced skip patterns")
    return passed(NAME, f"equal AR's alone and at width 2 on {', '.join(subject.families)}: {drafted} drafted and "
                        f"{skipped} skipped steps, resumed after up to {longest} skips (runs of {RUN}), "
                        f"{dropped} drafts dropped whole, depth hints 1 to 8")
